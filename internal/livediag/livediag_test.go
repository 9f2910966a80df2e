package livediag

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/cliutil/metrics"
)

// histogram is the buckets of a latency histogram holding counts
// observations of each of the values (seconds), as a member exports them.
func histogram(labels map[string]string, values ...float64) []metrics.Sample {
	var ss []metrics.Sample
	for _, le := range []string{"0.001", "0.002", "0.004", "0.008", "0.016", "0.032", "0.064", "0.128", "0.256", "0.512", "1.024", "+Inf"} {
		bound := parseLE(le)
		n := 0.0
		for _, v := range values {
			if v <= bound {
				n++
			}
		}
		l := map[string]string{"le": le}
		for k, v := range labels {
			l[k] = v
		}
		ss = append(ss, metrics.Sample{Labels: l, Value: n})
	}
	return ss
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func healthyMember(id uint64, name string, leader uint64) Member {
	st := Status{Leader: leader, Term: 2, RaftIndex: 100, AppliedIndex: 100, DBSize: 1 << 20, DBSizeInUse: 1 << 19, Revision: 50, Version: "3.7.3"}
	ms := map[string][]metrics.Sample{Quota: {{Labels: map[string]string{}, Value: 2 << 30}}}
	return Member{ID: id, Name: name, Endpoint: "http://10.0.0." + fmt.Sprint(id) + ":2379", Before: st, After: st,
		MetricsBefore: ms, MetricsAfter: ms, HashRevision: 50, Hash: 0xabc}
}

func cluster() Input {
	return Input{Window: 5 * time.Second, Members: []Member{healthyMember(1, "m1", 1), healthyMember(2, "m2", 1), healthyMember(3, "m3", 1)}}
}

func verdictWith(r Report, sev Severity, words ...string) bool {
	for _, v := range r.Verdicts {
		ok := v.Severity == sev
		for _, w := range words {
			ok = ok && strings.Contains(v.Text+" "+v.Evidence, w)
		}
		if ok {
			return true
		}
	}
	return false
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(in *Input)
		sev     Severity
		words   []string
		healthy bool
	}{
		{"healthy", func(*Input) {}, Info, []string{"healthy: 3 members answer, m1 leads at term 2"}, true},
		{"a member down", func(in *Input) { in.Members[2] = Member{ID: 3, Name: "m3", Endpoint: "e3", Err: "connection refused"} },
			Critical, []string{"member m3 (3) at e3 does not answer", "connection refused"}, false},
		{"no leader", func(in *Input) {
			for i := range in.Members {
				in.Members[i].After.Leader = 0
			}
		}, Critical, []string{"no member knows a leader"}, false},
		{"a member lags", func(in *Input) {
			in.Members[1].After.AppliedIndex = 100 - 5000 + 5000 - 0
			in.Members[0].After.RaftIndex = 40000
		},
			Warning, []string{"member m2 lags 39900 entries"}, false},
		{"a member lags and receives a snapshot", func(in *Input) {
			in.Members[0].After.RaftIndex = 40000
			in.Members[1].MetricsAfter = map[string][]metrics.Sample{SnapshotReceiving: {{Labels: map[string]string{"From": "1"}, Value: 1}}}
		}, Warning, []string{"member m2 lags 39900 entries and is receiving a snapshot"}, false},
		{"a learner caught up", func(in *Input) { in.Members[2].Learner = true }, Info, []string{"learner m3 is caught up: it can be promoted"}, true},
		{"a db near its quota, fragmented", func(in *Input) {
			in.Members[0].After.DBSize, in.Members[0].After.DBSizeInUse = 1900<<20, 700<<20
		}, Warning, []string{"db of m1 is 93% of its quota, 63% of it free: defragment m1"}, false},
		{"a db near its quota, full", func(in *Input) {
			in.Members[0].After.DBSize, in.Members[0].After.DBSizeInUse = 1900<<20, 1800<<20
		}, Warning, []string{"db of m1 is 93% of its quota and little of it is free"}, false},
		{"an alarm", func(in *Input) { in.Alarms = []Alarm{{MemberID: 2, Alarm: "NOSPACE"}} }, Critical, []string{"alarm NOSPACE raised on m2"}, false},
		{"a keyspace that differs", func(in *Input) { in.Members[2].Hash = 0xdef }, Critical, []string{"keyspace of m3 differs from m1's", "00000abc", "00000def"}, false},
		{"hashes after different compactions do not compare", func(in *Input) { in.Members[2].Hash, in.Members[2].CompactRevision = 0xdef, 10 },
			Info, []string{"healthy"}, true},
		{"a slow disk", func(in *Input) {
			in.Members[1].MetricsBefore = map[string][]metrics.Sample{WALFsync: histogram(nil, repeat(0.001, 100)...)}
			in.Members[1].MetricsAfter = map[string][]metrics.Sample{WALFsync: histogram(nil, append(repeat(0.001, 100), repeat(0.2, 20)...)...)}
		}, Warning, []string{"WAL fsync p99 256 ms on m2: the disk is the bottleneck", "20 fsyncs in the window"}, false},
		{"fast fsyncs before the window do not count", func(in *Input) {
			in.Members[1].MetricsBefore = map[string][]metrics.Sample{WALFsync: histogram(nil, repeat(0.5, 100)...)}
			in.Members[1].MetricsAfter = map[string][]metrics.Sample{WALFsync: histogram(nil, append(repeat(0.5, 100), repeat(0.001, 20)...)...)}
		}, Info, []string{"healthy"}, true},
		{"a slow peer", func(in *Input) {
			in.Members[0].MetricsAfter = map[string][]metrics.Sample{PeerRoundTrip: append(histogram(map[string]string{"To": "2"}, repeat(0.001, 10)...),
				histogram(map[string]string{"To": "3"}, repeat(0.3, 10)...)...)}
		}, Warning, []string{"round trip from m1 to m3 p99 512 ms"}, false},
		{"failed sends", func(in *Input) {
			in.Members[0].MetricsAfter = map[string][]metrics.Sample{PeerSentFailures: {{Labels: map[string]string{"To": "3"}, Value: 12}}}
		}, Warning, []string{"m1 fails to send to m3", "12 failed sends"}, false},
		{"a leader change", func(in *Input) { in.Members[1].After.Term = 3 }, Warning, []string{"the leader changed during the 5s sampled"}, false},
		{"versions differ", func(in *Input) { in.Members[2].After.Version = "3.6.16" }, Info, []string{"different versions", "3.6.16: m3"}, true},
		{"a clock ahead", func(in *Input) {
			for i := range in.Members {
				in.Members[i].Clock = clock(-300*time.Millisecond, 700*time.Millisecond)
			}
			in.Members[2].Clock = clock(3200*time.Millisecond, 4100*time.Millisecond)
		}, Warning, []string{"the clock of m3 is at least 2.5 s ahead of m1's"}, false},
		{"clocks that may agree", func(in *Input) {
			in.Members[0].Clock = clock(-300*time.Millisecond, 700*time.Millisecond)
			in.Members[1].Clock = clock(500*time.Millisecond, 1600*time.Millisecond)
		}, Info, []string{"healthy"}, true},
		{"feature gates differ", func(in *Input) {
			for i := range in.Members {
				in.Members[i].MetricsAfter = map[string][]metrics.Sample{FeatureEnabled: gates(i == 1)}
			}
		}, Warning, []string{"disagree on feature gate CompactHashCheck", "on: m2; off: m1, m3"}, false},
		{"feature gates away from their defaults", func(in *Input) {
			for i := range in.Members {
				in.Members[i].MetricsAfter = map[string][]metrics.Sample{FeatureEnabled: gates(true)}
			}
		}, Info, []string{"feature gates away from their defaults on every member: CompactHashCheck=true"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := cluster()
			tc.change(&in)
			r := Judge(in)
			if !verdictWith(r, tc.sev, tc.words...) {
				t.Errorf("no %s verdict with %q in %+v", tc.sev, tc.words, r.Verdicts)
			}
			if r.Healthy != tc.healthy {
				t.Errorf("healthy %v, want %v: %+v", r.Healthy, tc.healthy, r.Verdicts)
			}
		})
	}
}

func TestRedactLeavesNoNameOrAddress(t *testing.T) {
	in := cluster()
	in.Members[2].Err = "dial tcp 10.0.0.3:2379: connection refused"
	Redact(&in)
	var b strings.Builder
	r := Judge(in)
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"m1", "m2", "m3", "10.0.0."} {
		if strings.Contains(b.String(), secret) {
			t.Errorf("the redacted report holds %q:\n%s", secret, b.String())
		}
	}
}

func clock(low, high time.Duration) metrics.ClockOffset {
	return metrics.ClockOffset{Low: low, High: high, Known: true}
}

// gates is etcd_server_feature_enabled as a member exports it, with
// CompactHashCheck on or off and the other gates at their defaults.
func gates(compactHashCheck bool) []metrics.Sample {
	on := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	return []metrics.Sample{
		{Labels: map[string]string{"name": "CompactHashCheck", "stage": "ALPHA"}, Value: on(compactHashCheck)},
		{Labels: map[string]string{"name": "FastLeaseKeepAlive", "stage": "BETA"}, Value: 1},
		{Labels: map[string]string{"name": "LeaseCheckpoint", "stage": "ALPHA"}, Value: 0},
	}
}
