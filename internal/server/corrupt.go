package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/transport"
	"github.com/cairnkv/cairn/pkg/store"
)

// Corruption detection, as etcd 3.7.3 has it (observed from the outside):
//
//   - the initial check (feature gate InitialCorruptCheck): a member that
//     restarts compares its HashKV with its peers' at its own revision
//     before it serves anyone, and refuses to start on a mismatch;
//   - the periodic check (--corrupt-check-time): the leader compares its
//     HashKV with every follower's at the same revision and raises the
//     CORRUPT alarm for the member that differs;
//   - the compaction hash check (feature gate CompactHashCheck,
//     --compact-hash-check-time): the leader compares the hashes its store
//     kept from its last compactions with the followers' at those revisions.
//
// Peers answer hash queries on the peer port at pathHashKV, as etcd's do:
// GET with the JSON of a HashKVRequest, the JSON of a HashKVResponse back,
// an error as a 400 with the error's text.

// ErrCorrupt is the error of the requests refused while the CORRUPT alarm
// is raised (etcd's "corrupt cluster", gRPC code DataLoss).
var ErrCorrupt = errors.New("etcdserver: corrupt cluster")

const pathHashKV = "/members/hashkv"

// DefaultCompactHashCheckTime is etcd's --compact-hash-check-time.
const DefaultCompactHashCheckTime = time.Minute

// errClusterIDMismatch is a peer's refusal of a query from another cluster.
var errClusterIDMismatch = errors.New("cluster ID mismatch")

// hashKVQuery and hashKVAnswer are the JSON of etcd's HashKVRequest and
// HashKVResponse (the field names of their JSON tags).
type hashKVQuery struct {
	Revision int64 `json:"revision,omitempty"`
}

type hashKVAnswer struct {
	Header struct {
		ClusterID uint64 `json:"cluster_id,omitempty"`
		MemberID  uint64 `json:"member_id,omitempty"`
		Revision  int64  `json:"revision,omitempty"`
	} `json:"header"`
	Hash            uint32 `json:"hash,omitempty"`
	CompactRevision int64  `json:"compact_revision,omitempty"`
	HashRevision    int64  `json:"hash_revision,omitempty"`
}

// serveHashKV answers a peer's hash query with this member's HashKV.
func (s *Server) serveHashKV(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	if got := r.Header.Get(transport.HeaderClusterID); got != "" && got != strconv.FormatUint(s.clusterID, 16) {
		http.Error(w, errClusterIDMismatch.Error(), http.StatusPreconditionFailed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
	if err != nil {
		http.Error(w, "error reading body", http.StatusBadRequest)
		return
	}
	var q hashKVQuery
	if err := json.Unmarshal(body, &q); err != nil {
		http.Error(w, "error unmarshalling request", http.StatusBadRequest)
		return
	}
	st := s.st()
	h, err := st.HashKV(q.Revision)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var ans hashKVAnswer
	ans.Header.ClusterID, ans.Header.MemberID, ans.Header.Revision = s.clusterID, s.id, st.Rev()
	ans.Hash, ans.CompactRevision, ans.HashRevision = h.Hash, h.CompactRevision, h.HashRevision
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(&ans)
}

// peerHash is a peer's answer to a hash query, or why there is none.
type peerHash struct {
	id   uint64
	urls []string
	resp *hashKVAnswer
	err  error
}

// peerHashes asks every other member for its HashKV at rev, all at once,
// trying each of a member's peer URLs until one answers. The answers are in
// the order of the member IDs.
func (s *Server) peerHashes(ctx context.Context, rev int64) []peerHash {
	var out []peerHash
	for _, m := range s.members.list() {
		if m.ID != s.id {
			out = append(out, peerHash{id: m.ID, urls: m.PeerURLs})
		}
	}
	slices.SortFunc(out, func(a, b peerHash) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func(p *peerHash) {
			defer wg.Done()
			p.err = errors.New("member has no peer URL")
			for _, u := range p.urls {
				p.resp, p.err = s.askHashKV(ctx, u, rev)
				if p.err == nil {
					return
				}
				s.log.Warn("failed hash kv request", "local-member-id", hexID(s.id), "requested-revision", rev,
					"remote-peer-endpoint", u, "error", p.err.Error())
			}
		}(&out[i])
	}
	wg.Wait()
	return out
}

func (s *Server) askHashKV(ctx context.Context, peerURL string, rev int64) (*hashKVAnswer, error) {
	body, _ := json.Marshal(hashKVQuery{Revision: rev})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(peerURL, "/")+pathHashKV, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set(transport.HeaderClusterID, strconv.FormatUint(s.clusterID, 16))
	resp, err := s.peerClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusBadRequest, http.StatusPreconditionFailed:
		text := strings.TrimSpace(string(data))
		for _, known := range []error{store.ErrCompacted, store.ErrFutureRev, errClusterIDMismatch} {
			if text == known.Error() {
				return nil, known
			}
		}
		return nil, fmt.Errorf("unexpected http status %s while getting body %q", resp.Status, text)
	default:
		return nil, fmt.Errorf("unexpected http status %s while getting body %q", resp.Status, strings.TrimSpace(string(data)))
	}
	ans := new(hashKVAnswer)
	if err := json.Unmarshal(data, ans); err != nil {
		return nil, fmt.Errorf("decode hash kv answer: %w", err)
	}
	return ans, nil
}

// checkCtx is a context for one check: it ends after the request timeout
// (etcd's: 5s + 2 election timeouts) or when the member stops.
func (s *Server) checkCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), s.requestTimeout())
	go func() {
		select {
		case <-s.stopc:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// initialCorruptCheck is etcd's initial corruption check: with the
// InitialCorruptCheck gate on, a member restarting on a data dir that has
// applied entries compares its HashKV with its peers' at its revision, and
// refuses to start if a peer at the same compact revision has another hash.
// Peers that cannot answer are skipped with a warning.
func (s *Server) initialCorruptCheck() error {
	if !s.cfg.Features.Enabled(FeatureInitialCorruptCheck) {
		return nil
	}
	if ci, _ := s.st().ConsistentIndex(); ci == 0 {
		return nil // a new member: nothing to compare yet
	}
	s.log.Info("starting initial corruption check", "local-member-id", hexID(s.id), "timeout", s.requestTimeout().String())
	h, err := s.st().HashKV(0)
	if err != nil {
		return fmt.Errorf("failed to get hash value (%v)", err)
	}
	ctx, cancel := s.checkCtx()
	defer cancel()
	mismatch := 0
	for _, p := range s.peerHashes(ctx, h.HashRevision) {
		if p.resp != nil {
			if p.resp.Hash == h.Hash {
				continue
			}
			fields := []any{"local-member-id", hexID(s.id), "local-member-revision", h.HashRevision,
				"local-member-compact-revision", h.CompactRevision, "local-member-hash", h.Hash,
				"remote-peer-id", hexID(p.id), "remote-peer-endpoints", p.urls, "remote-peer-revision", p.resp.Header.Revision,
				"remote-peer-compact-revision", p.resp.CompactRevision, "remote-peer-hash", p.resp.Hash}
			if p.resp.CompactRevision == h.CompactRevision {
				s.log.Warn("found different hash values from remote peer", fields...)
				mismatch++
			} else {
				s.log.Warn("found different compact revision values from remote peer", fields...)
			}
			continue
		}
		fields := []any{"local-member-id", hexID(s.id), "local-member-revision", h.HashRevision,
			"local-member-compact-revision", h.CompactRevision, "local-member-hash", h.Hash,
			"remote-peer-id", hexID(p.id), "remote-peer-endpoints", p.urls, "error", p.err.Error()}
		switch {
		case errors.Is(p.err, store.ErrFutureRev):
			s.log.Warn("cannot fetch hash from slow remote peer", fields...)
		case errors.Is(p.err, store.ErrCompacted):
			s.log.Warn("cannot fetch hash from remote peer; local member is behind", fields...)
		case errors.Is(p.err, errClusterIDMismatch):
			s.log.Warn("cluster ID mismatch", fields...)
		default:
			s.log.Warn("skipped remote peer in initial corruption check: no answer", fields...)
		}
	}
	if mismatch > 0 {
		return fmt.Errorf("%s found data inconsistency with peers", hexID(s.id))
	}
	s.log.Info("initial corruption checking passed; no corruption", "local-member-id", hexID(s.id))
	return nil
}

// startCorruptChecks starts the loops of the periodic and the compaction
// hash checks that the configuration asks for.
func (s *Server) startCorruptChecks() {
	if s.cfg.CorruptCheckTime > 0 {
		s.log.Info("enabled corruption checking", "local-member-id", hexID(s.id), "interval", s.cfg.CorruptCheckTime.String())
		s.wg.Add(1)
		go s.corruptCheckLoop(s.cfg.CorruptCheckTime)
	}
	if s.cfg.Features.Enabled(FeatureCompactHashCheck) {
		interval := s.cfg.CompactHashCheckTime
		if interval <= 0 {
			interval = DefaultCompactHashCheckTime
		}
		s.wg.Add(1)
		go s.compactHashLoop(interval)
	}
}

func (s *Server) isLeader() bool { return s.leaderID.Load() == s.id }

func (s *Server) corruptCheckLoop(interval time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stopc:
			return
		case <-t.C:
		}
		if !s.isLeader() {
			continue
		}
		if err := s.periodicCorruptCheck(); err != nil {
			s.log.Warn("failed to check hash KV", "error", err.Error())
		}
	}
}

// periodicCorruptCheck is one pass of the leader's check: its HashKV, the
// followers' at that revision, then (after a linearizable read, so that the
// leader has applied at least what any follower answered from) its HashKV
// again. The CORRUPT alarm goes up, once a pass, for the first problem
// found: for the leader itself if its own hash changed at the same
// revision, or if a follower is ahead of it; for a follower whose hash at
// the same compact revision differs.
func (s *Server) periodicCorruptCheck() error {
	h1, err := s.st().HashKV(0)
	if err != nil {
		return err
	}
	ctx, cancel := s.checkCtx()
	defer cancel()
	peers := s.peerHashes(ctx, h1.HashRevision)
	if err := s.LinearizableReadNotify(ctx); err != nil {
		return err
	}
	st := s.st()
	h2, err := st.HashKV(0)
	if err != nil {
		return err
	}
	rev2 := h2.HashRevision
	alarmed := false
	mismatch := func(id uint64) {
		if !alarmed {
			alarmed = true
			s.raiseCorrupt(id)
		}
	}
	if h2.Hash != h1.Hash && h2.HashRevision == h1.HashRevision && h2.CompactRevision == h1.CompactRevision {
		s.log.Warn("found hash mismatch", "revision-1", h1.HashRevision, "compact-revision-1", h1.CompactRevision, "hash-1", h1.Hash,
			"revision-2", h2.HashRevision, "compact-revision-2", h2.CompactRevision, "hash-2", h2.Hash)
		mismatch(s.id)
	}
	checked := 0
	for _, p := range peers {
		if p.resp == nil {
			continue
		}
		checked++
		if p.resp.Header.Revision > rev2 {
			s.log.Warn("revision from follower must be less than or equal to leader's", "leader-revision", rev2,
				"follower-revision", p.resp.Header.Revision, "follower-peer-id", hexID(p.id))
			mismatch(s.id)
		}
		if p.resp.CompactRevision > h2.CompactRevision {
			s.log.Warn("compact revision from follower must be less than or equal to leader's", "leader-compact-revision", h2.CompactRevision,
				"follower-compact-revision", p.resp.CompactRevision, "follower-peer-id", hexID(p.id))
			mismatch(s.id)
		}
		if p.resp.CompactRevision == h1.CompactRevision && p.resp.Hash != h1.Hash {
			s.log.Warn("same compact revision then hashes must match", "leader-compact-revision", h1.CompactRevision,
				"leader-hash", h1.Hash, "follower-compact-revision", p.resp.CompactRevision, "follower-hash", p.resp.Hash,
				"follower-peer-id", hexID(p.id))
			mismatch(p.id)
		}
	}
	s.log.Info("finished peer corruption check", "number-of-peers-checked", checked)
	return nil
}

// raiseCorrupt proposes the CORRUPT alarm for a member (0: the whole
// cluster, when no majority tells which members are wrong).
func (s *Server) raiseCorrupt(id uint64) {
	ctx, cancel := s.checkCtx()
	defer cancel()
	req := &pb.InternalRaftRequest{Alarm: &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: id, Alarm: pb.AlarmType_CORRUPT}}
	if _, err := s.Propose(ctx, req); err != nil {
		s.log.Warn("failed to raise the CORRUPT alarm", "member-id", hexID(id), "error", err.Error())
	}
}

// compactionRevs are the revisions of the compactions this member has
// seen, the newest last, as many as the store keeps hashes for (etcd: 10).
type compactionRevs struct {
	revs    []int64
	checked int64 // the newest revision checked on the whole cluster
}

const keptCompactions = 10

func (c *compactionRevs) observe(rev int64) {
	if rev <= 0 || (len(c.revs) > 0 && c.revs[len(c.revs)-1] >= rev) {
		return
	}
	c.revs = append(c.revs, rev)
	if len(c.revs) > keptCompactions {
		c.revs = slices.Delete(c.revs, 0, len(c.revs)-keptCompactions)
	}
}

// unchecked returns the revisions newer than the last one checked, newest
// first.
func (c *compactionRevs) unchecked() []int64 {
	var out []int64
	for i := len(c.revs) - 1; i >= 0 && c.revs[i] > c.checked; i-- {
		out = append(out, c.revs[i])
	}
	return out
}

// compactHashLoop runs the compaction hash check on the leader every
// interval. The store keeps the hashes of its last compactions but does not
// list them, so the loop notes the compaction revision as it moves (every
// second at most), and asks the store for its hash at each.
func (s *Server) compactHashLoop(interval time.Duration) {
	defer s.wg.Done()
	sample := min(interval, time.Second)
	st := time.NewTicker(sample)
	defer st.Stop()
	check := time.NewTicker(interval)
	defer check.Stop()
	var revs compactionRevs
	for {
		select {
		case <-s.stopc:
			return
		case <-st.C:
			revs.observe(s.st().CompactRev())
		case <-check.C:
			revs.observe(s.st().CompactRev())
			if s.isLeader() {
				s.compactHashCheck(&revs)
			}
		}
	}
}

// compactHashCheck compares, newest first, the kept hashes of the
// compactions not checked yet with the followers' at those revisions, and
// stops at the first revision it could check on the whole cluster or where
// it found a mismatch.
func (s *Server) compactHashCheck(revs *compactionRevs) {
	s.log.Info("starting compact hash check", "local-member-id", hexID(s.id), "timeout", s.requestTimeout().String())
	unchecked := revs.unchecked()
	for i, rev := range unchecked {
		h, err := s.st().HashKV(rev)
		// A kept hash is the one before the compaction, with the compact
		// revision before it; one computed now (after a restart: the kept
		// hashes live in memory only) is not comparable with the peers'.
		if err != nil || h.CompactRevision == rev {
			continue
		}
		ctx, cancel := s.checkCtx()
		peers := s.peerHashes(ctx, rev)
		cancel()
		if len(peers) == 0 {
			continue
		}
		if s.checkCompactionHash(h, peers, revs) {
			s.log.Info("finished compaction hash check", "number-of-hashes-checked", i+1)
			return
		}
	}
	s.log.Info("finished compaction hash check", "number-of-hashes-checked", len(unchecked))
}

// checkCompactionHash groups the members by their hash at h's revision
// (the peers at another compact revision, or that did not answer, are
// skipped) and, if they differ, raises the CORRUPT alarm for the members
// outside the majority, or for the whole cluster (member 0) if there is no
// majority. It reports whether the revision is done with: checked on every
// peer, or a mismatch found.
func (s *Server) checkCompactionHash(h store.KVHash, peers []peerHash, revs *compactionRevs) bool {
	groups := map[uint32][]uint64{h.Hash: {s.id}}
	checked := 0
	for _, p := range peers {
		var reason string
		switch {
		case p.err != nil:
			reason = fmt.Sprintf("failed to get peer hash: %v", p.err)
		case p.resp == nil:
			reason = "peer returned empty response"
		case p.resp.CompactRevision != h.CompactRevision:
			reason = fmt.Sprintf("peer compact revision %d does not match leader compact revision %d", p.resp.CompactRevision, h.CompactRevision)
		}
		if reason != "" {
			s.log.Warn("Skipped peer's hash", "number-of-peers", len(peers), "leader-id", hexID(s.id), "peer-id", hexID(p.id), "reason", reason)
			continue
		}
		checked++
		groups[p.resp.Hash] = append(groups[p.resp.Hash], p.id)
	}
	if len(groups) == 1 {
		if checked == len(peers) {
			s.log.Info("successfully checked hash on whole cluster", "number-of-peers-checked", checked, "revision", h.HashRevision, "compactRevision", h.CompactRevision)
			revs.checked = max(revs.checked, h.HashRevision)
			return true
		}
		s.log.Warn("skipped revision in compaction hash check; was not able to check all peers", "number-of-peers-checked", checked,
			"number-of-peers", len(peers), "revision", h.HashRevision, "compactRevision", h.CompactRevision)
		return false
	}
	quorum := (len(peers)+1)/2 + 1
	hashes := make([]uint32, 0, len(groups))
	for hash := range groups {
		hashes = append(hashes, hash)
	}
	slices.Sort(hashes)
	majority, quorumExists := uint32(0), false
	for _, hash := range hashes {
		if len(groups[hash]) >= quorum {
			majority, quorumExists = hash, true
		}
	}
	if !quorumExists {
		s.log.Error("Detected compaction hash mismatch but cannot identify the corrupted members, so intentionally set the memberID as 0",
			"leader-id", hexID(s.id), "leader-revision", h.HashRevision, "leader-compact-revision", h.CompactRevision, "leader-hash", h.Hash)
		s.raiseCorrupt(0)
	}
	for _, hash := range hashes {
		if quorumExists && hash == majority {
			continue
		}
		ids := groups[hash]
		if quorumExists {
			for _, id := range ids {
				s.raiseCorrupt(id)
			}
		}
		s.log.Error("Detected compaction hash mismatch", "leader-id", hexID(s.id), "leader-revision", h.HashRevision,
			"leader-compact-revision", h.CompactRevision, "leader-hash", h.Hash, "peer-hash", hash, "peer-ids", hexIDs(ids),
			"quorum-exist", quorumExists)
	}
	return true
}

// refusedWhenCorrupt reports whether a request fails while the CORRUPT
// alarm is raised: as in etcd, everything that writes or compacts the
// keyspace, and leases being granted or revoked. Reads (read-only txns
// included) are still served.
func refusedWhenCorrupt(req *pb.InternalRaftRequest) bool {
	switch {
	case req.Put != nil, req.DeleteRange != nil, req.Compaction != nil, req.LeaseGrant != nil, req.LeaseRevoke != nil:
		return true
	case req.Txn != nil:
		return txnWrites(req.Txn)
	}
	return false
}

func txnWrites(t *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{t.Success, t.Failure} {
		for _, op := range ops {
			if op.GetRequestPut() != nil || op.GetRequestDeleteRange() != nil || (op.GetRequestTxn() != nil && txnWrites(op.GetRequestTxn())) {
				return true
			}
		}
	}
	return false
}

func hexID(id uint64) string { return strconv.FormatUint(id, 16) }

func hexIDs(ids []uint64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = hexID(id)
	}
	return strings.Join(parts, ",")
}
