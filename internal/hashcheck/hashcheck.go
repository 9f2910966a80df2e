// Package hashcheck is corruption detection between the members of a
// cluster: the HashKV peer endpoint, and the initial, periodic and
// compaction hash checks that compare a member's HashKV with its peers'.
// It is driven by calls from internal/server, through the Member interface
// the server implements, and runs no goroutine of its own (the server's
// loops call it on their ticks). It may import pkg/store and
// internal/transport (for the cluster ID header), never internal/server or
// internal/api.
package hashcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

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
// Peers answer hash queries on the peer port at Path, as etcd's do: GET
// with the JSON of a HashKVRequest, the JSON of a HashKVResponse back, an
// error as a 400 with the error's text.

// Path is the peer route of hash queries (Checker.ServeHTTP answers it).
const Path = "/members/hashkv"

// DefaultCompactHashCheckTime is etcd's --compact-hash-check-time.
const DefaultCompactHashCheckTime = time.Minute

// Member is what the checks need of the member they run on.
type Member interface {
	// ID and ClusterID are the member's and its cluster's IDs.
	ID() uint64
	ClusterID() uint64
	// Store is the member's current store.
	Store() *store.Store
	// Peers are the members of the cluster, in any order (the member
	// itself, if listed, is skipped).
	Peers() []Peer
	// LinearizableReadNotify returns once the member has applied what the
	// leader had committed at the call.
	LinearizableReadNotify(ctx context.Context) error
	// RaiseCorrupt proposes the CORRUPT alarm for a member (0: the whole
	// cluster).
	RaiseCorrupt(ctx context.Context, id uint64) error
}

// Peer is a member: its ID and peer URLs.
type Peer struct {
	ID   uint64
	URLs []string
}

// Config is how the checks reach the peers and how long they wait.
type Config struct {
	Logger *slog.Logger
	// Client carries the hash queries to the peers.
	Client *http.Client
	// Timeout bounds one check (etcd: its request timeout).
	Timeout time.Duration
	// Stop, once closed, ends the checks under way.
	Stop <-chan struct{}
}

// Checker runs the checks of one member.
type Checker struct {
	m   Member
	cfg Config
	log *slog.Logger
}

// New returns the checker of m.
func New(m Member, cfg Config) *Checker {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	return &Checker{m: m, cfg: cfg, log: cfg.Logger}
}

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

// ServeHTTP answers a peer's hash query (at Path) with this member's
// HashKV.
func (c *Checker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	if got := r.Header.Get(transport.HeaderClusterID); got != "" && got != strconv.FormatUint(c.m.ClusterID(), 16) {
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
	st := c.m.Store()
	h, err := st.HashKV(q.Revision)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var ans hashKVAnswer
	ans.Header.ClusterID, ans.Header.MemberID, ans.Header.Revision = c.m.ClusterID(), c.m.ID(), st.Rev()
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
func (c *Checker) peerHashes(ctx context.Context, rev int64) []peerHash {
	var out []peerHash
	for _, p := range c.m.Peers() {
		if p.ID != c.m.ID() {
			out = append(out, peerHash{id: p.ID, urls: p.URLs})
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
				p.resp, p.err = c.askHashKV(ctx, u, rev)
				if p.err == nil {
					return
				}
				c.log.Warn("failed hash kv request", "local-member-id", hexID(c.m.ID()), "requested-revision", rev,
					"remote-peer-endpoint", u, "error", p.err.Error())
			}
		}(&out[i])
	}
	wg.Wait()
	return out
}

func (c *Checker) askHashKV(ctx context.Context, peerURL string, rev int64) (*hashKVAnswer, error) {
	body, _ := json.Marshal(hashKVQuery{Revision: rev})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(peerURL, "/")+Path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set(transport.HeaderClusterID, strconv.FormatUint(c.m.ClusterID(), 16))
	resp, err := c.cfg.Client.Do(req)
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

// checkCtx is a context for one check: it ends after the timeout or when
// the member stops.
func (c *Checker) checkCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	go func() {
		select {
		case <-c.cfg.Stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// InitialCheck is etcd's initial corruption check (for the
// InitialCorruptCheck gate): a member restarting on a data dir that has
// applied entries compares its HashKV with its peers' at its revision, and
// fails if a peer at the same compact revision has another hash. Peers
// that cannot answer are skipped with a warning.
func (c *Checker) InitialCheck() error {
	if ci, _ := c.m.Store().ConsistentIndex(); ci == 0 {
		return nil // a new member: nothing to compare yet
	}
	id := c.m.ID()
	c.log.Info("starting initial corruption check", "local-member-id", hexID(id), "timeout", c.cfg.Timeout.String())
	h, err := c.m.Store().HashKV(0)
	if err != nil {
		return fmt.Errorf("failed to get hash value (%v)", err)
	}
	ctx, cancel := c.checkCtx()
	defer cancel()
	mismatch := 0
	for _, p := range c.peerHashes(ctx, h.HashRevision) {
		if p.resp != nil {
			if p.resp.Hash == h.Hash {
				continue
			}
			fields := []any{"local-member-id", hexID(id), "local-member-revision", h.HashRevision,
				"local-member-compact-revision", h.CompactRevision, "local-member-hash", h.Hash,
				"remote-peer-id", hexID(p.id), "remote-peer-endpoints", p.urls, "remote-peer-revision", p.resp.Header.Revision,
				"remote-peer-compact-revision", p.resp.CompactRevision, "remote-peer-hash", p.resp.Hash}
			if p.resp.CompactRevision == h.CompactRevision {
				c.log.Warn("found different hash values from remote peer", fields...)
				mismatch++
			} else {
				c.log.Warn("found different compact revision values from remote peer", fields...)
			}
			continue
		}
		fields := []any{"local-member-id", hexID(id), "local-member-revision", h.HashRevision,
			"local-member-compact-revision", h.CompactRevision, "local-member-hash", h.Hash,
			"remote-peer-id", hexID(p.id), "remote-peer-endpoints", p.urls, "error", p.err.Error()}
		switch {
		case errors.Is(p.err, store.ErrFutureRev):
			c.log.Warn("cannot fetch hash from slow remote peer", fields...)
		case errors.Is(p.err, store.ErrCompacted):
			c.log.Warn("cannot fetch hash from remote peer; local member is behind", fields...)
		case errors.Is(p.err, errClusterIDMismatch):
			c.log.Warn("cluster ID mismatch", fields...)
		default:
			c.log.Warn("skipped remote peer in initial corruption check: no answer", fields...)
		}
	}
	if mismatch > 0 {
		return fmt.Errorf("%s found data inconsistency with peers", hexID(id))
	}
	c.log.Info("initial corruption checking passed; no corruption", "local-member-id", hexID(id))
	return nil
}

// PeriodicCheck is one pass of the leader's check: its HashKV, the
// followers' at that revision, then (after a linearizable read, so that the
// leader has applied at least what any follower answered from) its HashKV
// again. The CORRUPT alarm goes up, once a pass, for the first problem
// found: for the leader itself if its own hash changed at the same
// revision, or if a follower is ahead of it; for a follower whose hash at
// the same compact revision differs.
func (c *Checker) PeriodicCheck() error {
	h1, err := c.m.Store().HashKV(0)
	if err != nil {
		return err
	}
	ctx, cancel := c.checkCtx()
	defer cancel()
	peers := c.peerHashes(ctx, h1.HashRevision)
	if err := c.m.LinearizableReadNotify(ctx); err != nil {
		return err
	}
	h2, err := c.m.Store().HashKV(0)
	if err != nil {
		return err
	}
	rev2 := h2.HashRevision
	alarmed := false
	mismatch := func(id uint64) {
		if !alarmed {
			alarmed = true
			c.raiseCorrupt(id)
		}
	}
	if h2.Hash != h1.Hash && h2.HashRevision == h1.HashRevision && h2.CompactRevision == h1.CompactRevision {
		c.log.Warn("found hash mismatch", "revision-1", h1.HashRevision, "compact-revision-1", h1.CompactRevision, "hash-1", h1.Hash,
			"revision-2", h2.HashRevision, "compact-revision-2", h2.CompactRevision, "hash-2", h2.Hash)
		mismatch(c.m.ID())
	}
	checked := 0
	for _, p := range peers {
		if p.resp == nil {
			continue
		}
		checked++
		if p.resp.Header.Revision > rev2 {
			c.log.Warn("revision from follower must be less than or equal to leader's", "leader-revision", rev2,
				"follower-revision", p.resp.Header.Revision, "follower-peer-id", hexID(p.id))
			mismatch(c.m.ID())
		}
		if p.resp.CompactRevision > h2.CompactRevision {
			c.log.Warn("compact revision from follower must be less than or equal to leader's", "leader-compact-revision", h2.CompactRevision,
				"follower-compact-revision", p.resp.CompactRevision, "follower-peer-id", hexID(p.id))
			mismatch(c.m.ID())
		}
		if p.resp.CompactRevision == h1.CompactRevision && p.resp.Hash != h1.Hash {
			c.log.Warn("same compact revision then hashes must match", "leader-compact-revision", h1.CompactRevision,
				"leader-hash", h1.Hash, "follower-compact-revision", p.resp.CompactRevision, "follower-hash", p.resp.Hash,
				"follower-peer-id", hexID(p.id))
			mismatch(p.id)
		}
	}
	c.log.Info("finished peer corruption check", "number-of-peers-checked", checked)
	return nil
}

// raiseCorrupt has the member propose the CORRUPT alarm for a member (0:
// the whole cluster, when no majority tells which members are wrong).
func (c *Checker) raiseCorrupt(id uint64) {
	ctx, cancel := c.checkCtx()
	defer cancel()
	if err := c.m.RaiseCorrupt(ctx, id); err != nil {
		c.log.Warn("failed to raise the CORRUPT alarm", "member-id", hexID(id), "error", err.Error())
	}
}

// CompactionRevs are the revisions of the compactions a member has seen,
// the newest last, as many as the store keeps hashes for (etcd: 10). The
// store keeps the hashes of its last compactions but does not list them,
// so the caller notes the compaction revision as it moves (Observe), and
// CompactHashCheck asks the store for its hash at each.
type CompactionRevs struct {
	revs    []int64
	checked int64 // the newest revision checked on the whole cluster
}

const keptCompactions = 10

// Observe notes the store's compaction revision.
func (c *CompactionRevs) Observe(rev int64) {
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
func (c *CompactionRevs) unchecked() []int64 {
	var out []int64
	for i := len(c.revs) - 1; i >= 0 && c.revs[i] > c.checked; i-- {
		out = append(out, c.revs[i])
	}
	return out
}

// CompactHashCheck is the leader's compaction hash check (for the
// CompactHashCheck gate): it compares, newest first, the kept hashes of the
// compactions not checked yet with the followers' at those revisions, and
// stops at the first revision it could check on the whole cluster or where
// it found a mismatch.
func (c *Checker) CompactHashCheck(revs *CompactionRevs) {
	c.log.Info("starting compact hash check", "local-member-id", hexID(c.m.ID()), "timeout", c.cfg.Timeout.String())
	unchecked := revs.unchecked()
	for i, rev := range unchecked {
		h, err := c.m.Store().HashKV(rev)
		// A kept hash is the one before the compaction, with the compact
		// revision before it; one computed now (after a restart: the kept
		// hashes live in memory only) is not comparable with the peers'.
		if err != nil || h.CompactRevision == rev {
			continue
		}
		ctx, cancel := c.checkCtx()
		peers := c.peerHashes(ctx, rev)
		cancel()
		if len(peers) == 0 {
			continue
		}
		if c.checkCompactionHash(h, peers, revs) {
			c.log.Info("finished compaction hash check", "number-of-hashes-checked", i+1)
			return
		}
	}
	c.log.Info("finished compaction hash check", "number-of-hashes-checked", len(unchecked))
}

// checkCompactionHash groups the members by their hash at h's revision
// (the peers at another compact revision, or that did not answer, are
// skipped) and, if they differ, raises the CORRUPT alarm for the members
// outside the majority, or for the whole cluster (member 0) if there is no
// majority. It reports whether the revision is done with: checked on every
// peer, or a mismatch found.
func (c *Checker) checkCompactionHash(h store.KVHash, peers []peerHash, revs *CompactionRevs) bool {
	self := c.m.ID()
	groups := map[uint32][]uint64{h.Hash: {self}}
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
			c.log.Warn("Skipped peer's hash", "number-of-peers", len(peers), "leader-id", hexID(self), "peer-id", hexID(p.id), "reason", reason)
			continue
		}
		checked++
		groups[p.resp.Hash] = append(groups[p.resp.Hash], p.id)
	}
	if len(groups) == 1 {
		if checked == len(peers) {
			c.log.Info("successfully checked hash on whole cluster", "number-of-peers-checked", checked, "revision", h.HashRevision, "compactRevision", h.CompactRevision)
			revs.checked = max(revs.checked, h.HashRevision)
			return true
		}
		c.log.Warn("skipped revision in compaction hash check; was not able to check all peers", "number-of-peers-checked", checked,
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
		c.log.Error("Detected compaction hash mismatch but cannot identify the corrupted members, so intentionally set the memberID as 0",
			"leader-id", hexID(self), "leader-revision", h.HashRevision, "leader-compact-revision", h.CompactRevision, "leader-hash", h.Hash)
		c.raiseCorrupt(0)
	}
	for _, hash := range hashes {
		if quorumExists && hash == majority {
			continue
		}
		ids := groups[hash]
		if quorumExists {
			for _, id := range ids {
				c.raiseCorrupt(id)
			}
		}
		c.log.Error("Detected compaction hash mismatch", "leader-id", hexID(self), "leader-revision", h.HashRevision,
			"leader-compact-revision", h.CompactRevision, "leader-hash", h.Hash, "peer-hash", hash, "peer-ids", hexIDs(ids),
			"quorum-exist", quorumExists)
	}
	return true
}

func hexID(id uint64) string { return strconv.FormatUint(id, 16) }

func hexIDs(ids []uint64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = hexID(id)
	}
	return strings.Join(parts, ",")
}
