// Package livediag judges what `cairn diagnose --endpoints` gathered from
// the members of a running cluster (cairn's or etcd's): each member's
// status at the start and the end of a sampling window, its metrics at both
// ends, the alarms, and the HashKV of every member at one revision. It
// says what is wrong in words, each verdict with its evidence. It does no
// I/O: internal/cli gathers, this package judges and reports.
package livediag

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/cliutil/metrics"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// Input is what was gathered.
type Input struct {
	Window  time.Duration
	Members []Member
	Alarms  []Alarm
}

// Member is one member as gathered; Err is set when it did not answer.
type Member struct {
	ID       uint64
	Name     string
	Endpoint string
	Learner  bool
	Err      string
	// Before and After are its status at the two ends of the window;
	// MetricsBefore and MetricsAfter its metric families then, by name.
	Before, After               Status
	MetricsBefore, MetricsAfter map[string][]metrics.Sample
	// Hash is its HashKV at HashRevision (HashErr if it did not answer),
	// with the compaction revision that hash covers from.
	HashRevision, CompactRevision int64
	Hash                          uint32
	HashErr                       string
	// Clock bounds its clock minus the clock of the machine that gathered.
	Clock metrics.ClockOffset
}

// Status is what a member's Status call answers.
type Status struct {
	Leader, Term, RaftIndex, AppliedIndex uint64
	DBSize, DBSizeInUse, Revision         int64
	Version, StorageVersion               string
	Errors                                []string
}

// FromStatus is the Status of a member's answer to a Status call.
func FromStatus(st *pb.StatusResponse) Status {
	return Status{
		Leader: st.GetLeader(), Term: st.GetRaftTerm(), RaftIndex: st.GetRaftIndex(), AppliedIndex: st.GetRaftAppliedIndex(),
		DBSize: st.GetDbSize(), DBSizeInUse: st.GetDbSizeInUse(), Revision: st.GetHeader().GetRevision(),
		Version: st.GetVersion(), StorageVersion: st.GetStorageVersion(), Errors: st.GetErrors(),
	}
}

// Alarm is an alarm raised on a member.
type Alarm struct {
	MemberID uint64
	Alarm    string
}

// Metric families read (etcd's names; cairn exports the same).
const (
	WALFsync          = "etcd_disk_wal_fsync_duration_seconds_bucket"
	BackendCommit     = "etcd_disk_backend_commit_duration_seconds_bucket"
	LeaderChanges     = "etcd_server_leader_changes_seen_total"
	Quota             = "etcd_server_quota_backend_bytes"
	PeerRoundTrip     = "etcd_network_peer_round_trip_time_seconds_bucket"
	PeerSentFailures  = "etcd_network_peer_sent_failures_total"
	SnapshotReceiving = "etcd_network_snapshot_receive_inflights_total"
	ProposalsFailed   = "etcd_server_proposals_failed_total"
	FeatureEnabled    = "etcd_server_feature_enabled"
)

// Families are the metric families to gather.
var Families = []string{WALFsync, BackendCommit, LeaderChanges, Quota, PeerRoundTrip, PeerSentFailures, SnapshotReceiving, ProposalsFailed, FeatureEnabled}

// Thresholds of the verdicts.
const (
	lagEntries        = 1000                   // a member this far behind the leader's index lags
	quotaShare        = 0.75                   // a db this full of its quota is near it
	freeShare         = 0.5                    // a db with this share of its file free is fragmented
	freeBytes         = 8 << 20                // ... when that is at least this much
	slowFsync         = 100 * time.Millisecond // WAL fsync p99 above this: the disk is the bottleneck
	slowCommit        = 250 * time.Millisecond // backend commit p99 above this
	slowPeerRoundTrip = 100 * time.Millisecond // peer round trip p99 above this
	clockSkew         = time.Second            // members' clocks at least this far apart are skewed (etcd's peers warn from 1 s)
)

// Severity orders verdicts: problems first.
type Severity string

const (
	Critical Severity = "critical"
	Warning  Severity = "warning"
	Info     Severity = "info"
)

// Verdict is one finding, in words, with the figures behind it.
type Verdict struct {
	Severity Severity `json:"severity"`
	Text     string   `json:"text"`
	Evidence string   `json:"evidence,omitempty"`
}

// Report is the judged input: a row per member and the verdicts.
type Report struct {
	Window   string      `json:"window"`
	Leader   string      `json:"leader,omitempty"`
	Term     uint64      `json:"term"`
	Members  []MemberRow `json:"members"`
	Alarms   []string    `json:"alarms,omitempty"`
	Verdicts []Verdict   `json:"verdicts"`
	Healthy  bool        `json:"healthy"`
}

// MemberRow is what the report shows of a member.
type MemberRow struct {
	Name            string  `json:"name"`
	ID              string  `json:"id"`
	Endpoint        string  `json:"endpoint"`
	Role            string  `json:"role"`
	Answered        bool    `json:"answered"`
	Error           string  `json:"error,omitempty"`
	Term            uint64  `json:"term,omitempty"`
	RaftIndex       uint64  `json:"raft_index,omitempty"`
	AppliedIndex    uint64  `json:"applied_index,omitempty"`
	Lag             uint64  `json:"lag"`
	DBSize          int64   `json:"db_size,omitempty"`
	DBSizeInUse     int64   `json:"db_size_in_use,omitempty"`
	Quota           int64   `json:"quota,omitempty"`
	FsyncP99MS      float64 `json:"wal_fsync_p99_ms"`
	CommitP99MS     float64 `json:"backend_commit_p99_ms"`
	LeaderChanges   float64 `json:"leader_changes_in_window"`
	ProposalsFailed float64 `json:"proposals_failed_in_window"`
	Version         string  `json:"version,omitempty"`
	HashKV          string  `json:"hashkv,omitempty"`
}

// Redact replaces the members' names and endpoints by member-N and
// endpoint-N, also where an error quotes them, for a report to hand to
// someone outside.
func Redact(in *Input) {
	var pairs []string
	for i, m := range in.Members {
		ep := fmt.Sprintf("endpoint-%d", i+1)
		pairs = append(pairs, m.Endpoint, ep)
		if _, hostPort, ok := strings.Cut(m.Endpoint, "://"); ok {
			pairs = append(pairs, hostPort, ep)
		}
	}
	scrub := strings.NewReplacer(pairs...)
	for i := range in.Members {
		m := &in.Members[i]
		m.Name, m.Endpoint = fmt.Sprintf("member-%d", i+1), fmt.Sprintf("endpoint-%d", i+1)
		m.Err, m.HashErr = scrub.Replace(m.Err), scrub.Replace(m.HashErr)
		for j, e := range m.After.Errors {
			m.After.Errors[j] = scrub.Replace(e)
		}
	}
}

// Judge makes the report.
func Judge(in Input) Report {
	r := Report{Window: in.Window.String()}
	byID := map[uint64]*Member{}
	var up []*Member
	for i := range in.Members {
		m := &in.Members[i]
		byID[m.ID] = m
		if m.Err == "" {
			up = append(up, m)
		}
	}
	name := func(id uint64) string {
		if m, ok := byID[id]; ok && m.Name != "" {
			return m.Name
		}
		return fmt.Sprintf("%x", id)
	}
	add := func(s Severity, evidence, format string, args ...any) {
		r.Verdicts = append(r.Verdicts, Verdict{Severity: s, Text: fmt.Sprintf(format, args...), Evidence: evidence})
	}

	// Who answers, who leads.
	for _, m := range in.Members {
		if m.Err != "" {
			add(Critical, m.Err, "member %s (%x) at %s does not answer", m.Name, m.ID, m.Endpoint)
		}
	}
	leaders := map[uint64]int{}
	var leaderIndex uint64
	for _, m := range up {
		leaders[m.After.Leader]++
		if m.After.Leader == m.ID {
			leaderIndex = m.After.RaftIndex
			r.Leader, r.Term = m.Name, m.After.Term
		}
	}
	switch {
	case len(up) == 0:
		add(Critical, "", "no member answers")
	case leaders[0] == len(up):
		add(Critical, "", "no member knows a leader: the cluster cannot write")
	case len(leaders) > 1:
		var views []string
		for _, m := range up {
			views = append(views, fmt.Sprintf("%s: %s", m.Name, name(m.After.Leader)))
		}
		add(Warning, strings.Join(views, ", "), "the members do not agree on the leader (an election under way?)")
	}
	for _, m := range up {
		if leaderIndex == 0 && m.After.Leader != 0 {
			leaderIndex = max(leaderIndex, m.After.RaftIndex)
		}
	}
	var changes float64
	termChanged := false
	for _, m := range up {
		changes = max(changes, counterDelta(*m, LeaderChanges))
		termChanged = termChanged || m.Before.Term != m.After.Term && m.Before.Term != 0
	}
	if changes > 0 || termChanged {
		add(Warning, fmt.Sprintf("leader changes seen in the window: %.0f", changes),
			"the leader changed during the %s sampled (term now %d)", in.Window, r.Term)
	}

	// Lag, snapshots, learners.
	for _, m := range up {
		lag := uint64(0)
		if leaderIndex > m.After.AppliedIndex {
			lag = leaderIndex - m.After.AppliedIndex
		}
		receiving := gauge(m.MetricsAfter, SnapshotReceiving) > 0
		role := "member"
		if m.Learner {
			role = "learner"
		}
		switch {
		case lag >= lagEntries && receiving:
			add(Warning, fmt.Sprintf("applied index %d, leader's index %d", m.After.AppliedIndex, leaderIndex),
				"%s %s lags %d entries and is receiving a snapshot", role, m.Name, lag)
		case lag >= lagEntries:
			add(Warning, fmt.Sprintf("applied index %d, leader's index %d", m.After.AppliedIndex, leaderIndex),
				"%s %s lags %d entries behind the leader", role, m.Name, lag)
		case m.Learner && leaderIndex > 0:
			add(Info, fmt.Sprintf("applied index %d, leader's index %d", m.After.AppliedIndex, leaderIndex),
				"learner %s is caught up: it can be promoted (member promote %x)", m.Name, m.ID)
		}
	}

	// The db: quota, fragmentation, alarms, hashes.
	var defrag []string
	for _, m := range up {
		size, inUse := m.After.DBSize, m.After.DBSizeInUse
		quota := int64(gauge(m.MetricsAfter, Quota))
		free := size - inUse
		evidence := fmt.Sprintf("db %s, in use %s, quota %s", printer.HumanBytes(size), printer.HumanBytes(inUse), printer.HumanBytes(quota))
		nearQuota := quota > 0 && float64(size) >= quotaShare*float64(quota)
		fragmented := size > 0 && float64(free) >= freeShare*float64(size) && free >= freeBytes
		switch {
		case nearQuota && fragmented:
			add(Warning, evidence, "db of %s is %.0f%% of its quota, %.0f%% of it free: defragment %s", m.Name,
				pct(size, quota), pct(free, size), m.Name)
		case nearQuota:
			add(Warning, evidence, "db of %s is %.0f%% of its quota and little of it is free: compact, or raise --quota-backend-bytes", m.Name, pct(size, quota))
		case fragmented:
			add(Info, evidence, "db of %s has %.0f%% of its file free (%s): a defragmentation would give it back", m.Name, pct(free, size), printer.HumanBytes(free))
		}
		if fragmented {
			defrag = append(defrag, m.Name)
		}
	}
	if len(defrag) > 1 {
		add(Info, "", "defragment %s, one at a time (cairn defrag --endpoints ...)", strings.Join(defrag, ", "))
	}
	for _, a := range in.Alarms {
		r.Alarms = append(r.Alarms, fmt.Sprintf("%s on %s", a.Alarm, name(a.MemberID)))
		add(Critical, "", "alarm %s raised on %s", a.Alarm, name(a.MemberID))
	}
	var hashed []*Member
	for _, m := range up {
		if m.HashErr == "" && m.HashRevision > 0 {
			hashed = append(hashed, m)
		}
	}
	for _, m := range hashed[min(1, len(hashed)):] {
		first := hashed[0]
		if m.CompactRevision == first.CompactRevision && m.Hash != first.Hash {
			add(Critical, fmt.Sprintf("revision %d: %s %08x, %s %08x", m.HashRevision, first.Name, first.Hash, m.Name, m.Hash),
				"the keyspace of %s differs from %s's at the same revision: a corrupted member (cairn check: endpoint hashkv --cluster)", m.Name, first.Name)
		}
	}

	// Disks and peers.
	for _, m := range up {
		fsync, n := histogramP99(m.MetricsBefore[WALFsync], m.MetricsAfter[WALFsync], nil)
		if n > 0 && fsync > slowFsync {
			add(Warning, fmt.Sprintf("%d fsyncs in the window", n), "WAL fsync p99 %s on %s: the disk is the bottleneck", ms(fsync), m.Name)
		}
		commit, n := histogramP99(m.MetricsBefore[BackendCommit], m.MetricsAfter[BackendCommit], nil)
		if n > 0 && commit > slowCommit {
			add(Warning, fmt.Sprintf("%d commits in the window", n), "backend commit p99 %s on %s: the disk is slow", ms(commit), m.Name)
		}
		for _, peer := range peersOf(m.MetricsAfter[PeerRoundTrip]) {
			only := map[string]string{"To": peer}
			rtt, n := histogramP99(nil, m.MetricsAfter[PeerRoundTrip], only) // probes are seconds apart: the whole history
			if n > 0 && rtt > slowPeerRoundTrip {
				add(Warning, fmt.Sprintf("%d probes", n), "round trip from %s to %s p99 %s: a slow network or a slow peer", m.Name, peerName(peer, byID), ms(rtt))
			}
		}
		for _, s := range m.MetricsAfter[PeerSentFailures] {
			if d := s.Value - valueOf(m.MetricsBefore[PeerSentFailures], s.Labels); d > 0 {
				add(Warning, fmt.Sprintf("%.0f failed sends in the window", d), "%s fails to send to %s", m.Name, peerName(s.Labels["To"], byID))
			}
		}
		if f := counterDelta(*m, ProposalsFailed); f > 0 {
			add(Warning, "", "%s failed %.0f proposals in the window", m.Name, f)
		}
		for _, e := range m.After.Errors {
			add(Warning, "", "%s reports: %s", m.Name, e)
		}
	}

	judgeClocks(up, add)
	judgeFeatureGates(up, add)

	// Versions.
	versions := map[string][]string{}
	for _, m := range up {
		versions[m.After.Version] = append(versions[m.After.Version], m.Name)
	}
	if len(versions) > 1 {
		var vs []string
		for v, ns := range versions {
			vs = append(vs, fmt.Sprintf("%s: %s", v, strings.Join(ns, ", ")))
		}
		sort.Strings(vs)
		add(Info, strings.Join(vs, "; "), "the members run different versions (an upgrade under way?)")
	}

	for _, m := range in.Members {
		r.Members = append(r.Members, row(m, leaderIndex))
	}
	slices.SortStableFunc(r.Verdicts, func(a, b Verdict) int { return rank(a.Severity) - rank(b.Severity) })
	r.Healthy = !slices.ContainsFunc(r.Verdicts, func(v Verdict) bool { return v.Severity != Info })
	if r.Healthy {
		r.Verdicts = append([]Verdict{{Severity: Info, Text: fmt.Sprintf("healthy: %d members answer, %s leads at term %d, none lags, no alarm, the same keyspace at revision %d",
			len(up), r.Leader, r.Term, hashRevision(hashed))}}, r.Verdicts...)
	}
	return r
}

func rank(s Severity) int { return map[Severity]int{Critical: 0, Warning: 1, Info: 2}[s] }

func hashRevision(hashed []*Member) int64 {
	if len(hashed) == 0 {
		return 0
	}
	return hashed[0].HashRevision
}

func row(m Member, leaderIndex uint64) MemberRow {
	r := MemberRow{Name: m.Name, ID: fmt.Sprintf("%x", m.ID), Endpoint: m.Endpoint, Role: "follower", Answered: m.Err == "", Error: m.Err}
	switch {
	case m.Learner:
		r.Role = "learner"
	case m.Err == "" && m.After.Leader == m.ID:
		r.Role = "leader"
	}
	if m.Err != "" {
		return r
	}
	s := m.After
	r.Term, r.RaftIndex, r.AppliedIndex, r.DBSize, r.DBSizeInUse, r.Version = s.Term, s.RaftIndex, s.AppliedIndex, s.DBSize, s.DBSizeInUse, s.Version
	if leaderIndex > s.AppliedIndex {
		r.Lag = leaderIndex - s.AppliedIndex
	}
	r.Quota = int64(gauge(m.MetricsAfter, Quota))
	fsync, _ := histogramP99(m.MetricsBefore[WALFsync], m.MetricsAfter[WALFsync], nil)
	commit, _ := histogramP99(m.MetricsBefore[BackendCommit], m.MetricsAfter[BackendCommit], nil)
	r.FsyncP99MS, r.CommitP99MS = msFloat(fsync), msFloat(commit)
	r.LeaderChanges, r.ProposalsFailed = counterDelta(m, LeaderChanges), counterDelta(m, ProposalsFailed)
	if m.HashErr == "" && m.HashRevision > 0 {
		r.HashKV = fmt.Sprintf("%08x@%d", m.Hash, m.HashRevision)
	}
	return r
}

// histogramP99 is the 99th percentile of the observations a histogram's
// buckets gained between before and after (only the series whose labels
// include only), as the upper bound of the bucket it falls in, and how many
// observations there were.
func histogramP99(before, after []metrics.Sample, only map[string]string) (time.Duration, int) {
	type bucket struct {
		le    float64
		count float64
	}
	var bs []bucket
	for _, s := range after {
		if !matches(s.Labels, only) {
			continue
		}
		le := parseLE(s.Labels["le"])
		bs = append(bs, bucket{le, s.Value - valueOf(before, s.Labels)})
	}
	if len(bs) == 0 {
		return 0, 0
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	// Several series with the same le (several peers): add them up.
	var merged []bucket
	for _, b := range bs {
		if n := len(merged); n > 0 && merged[n-1].le == b.le {
			merged[n-1].count += b.count
			continue
		}
		merged = append(merged, b)
	}
	total := merged[len(merged)-1].count
	if total <= 0 {
		return 0, 0
	}
	for _, b := range merged {
		if b.count >= 0.99*total {
			if math.IsInf(b.le, 1) {
				return time.Duration(merged[max(0, len(merged)-2)].le * float64(time.Second)), int(total)
			}
			return time.Duration(b.le * float64(time.Second)), int(total)
		}
	}
	return 0, int(total)
}

func parseLE(s string) float64 {
	if s == "+Inf" {
		return math.Inf(1)
	}
	var f float64
	fmt.Sscan(s, &f)
	return f
}

func matches(labels, only map[string]string) bool {
	for k, v := range only {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// valueOf is the value of the sample of ss with exactly labels; 0 if none.
func valueOf(ss []metrics.Sample, labels map[string]string) float64 {
	for _, s := range ss {
		if len(s.Labels) == len(labels) && matches(s.Labels, labels) {
			return s.Value
		}
	}
	return 0
}

// counterDelta is how much a counter family (all its series) grew in the
// window.
func counterDelta(m Member, family string) float64 {
	var d float64
	for _, s := range m.MetricsAfter[family] {
		d += s.Value - valueOf(m.MetricsBefore[family], s.Labels)
	}
	return d
}

// gauge is the sum of a gauge family's series.
func gauge(ms map[string][]metrics.Sample, family string) float64 {
	var v float64
	for _, s := range ms[family] {
		v += s.Value
	}
	return v
}

func peersOf(ss []metrics.Sample) []string {
	var peers []string
	for _, s := range ss {
		if p := s.Labels["To"]; p != "" && !slices.Contains(peers, p) {
			peers = append(peers, p)
		}
	}
	sort.Strings(peers)
	return peers
}

// peerName is the name of a peer a metric labels by its hex ID.
func peerName(hexID string, byID map[uint64]*Member) string {
	var id uint64
	if _, err := fmt.Sscanf(hexID, "%x", &id); err == nil {
		if m, ok := byID[id]; ok && m.Name != "" {
			return m.Name
		}
	}
	return hexID
}

func pct(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", msFloat(d)) }

func msFloat(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
