package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/alarm"
	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/cluster"
	"github.com/cairnkv/cairn/pkg/failpoint"
	"github.com/cairnkv/cairn/pkg/store"
)

// applyResult is what applying one proposal produced.
type applyResult struct {
	resp proto.Message
	err  error
	// physc closes when a compaction's revisions have left the backend.
	physc <-chan struct{}
}

func (s *Server) applyLoop() {
	defer s.wg.Done()
	// A snapshot that an entry forced (a lowered cluster version) but that
	// the db's commit or a defragmentation put off is tried again after a
	// while: no other entry may come to try it.
	var retry <-chan time.Time
	for {
		select {
		case <-s.stopc:
			return
		case <-retry:
		case ap := <-s.applyc:
			if ap.snapshot != nil {
				if err := s.installSnapshot(ap.snapshot); err != nil {
					s.fatal(err)
					return
				}
			}
			for _, e := range ap.entries {
				if err := s.applyEntry(e); err != nil {
					s.fatal(err)
					return
				}
			}
			s.applied.Advance(s.appliedIndex)
		}
		if err := s.maybeSnapshot(); err != nil {
			s.fatal(err)
			return
		}
		retry = nil
		if s.snapshotForced {
			retry = time.After(forcedSnapshotRetry)
		}
	}
}

// forcedSnapshotRetry is how long a forced snapshot that was put off waits
// before it is tried again.
const forcedSnapshotRetry = 100 * time.Millisecond

// applyEntry applies one committed entry. Entries at or below the db's
// consistent index are already in it; their conf changes still go to raft,
// which rebuilds its configuration from the log on a restart.
func (s *Server) applyEntry(e *raftpb.Entry) error {
	index := e.GetIndex()
	if index <= s.appliedIndex && e.GetType() == raftpb.EntryType_EntryNormal {
		return nil
	}
	already := index <= s.appliedIndex
	s.confs.See(index)
	switch e.GetType() {
	case raftpb.EntryType_EntryNormal:
		if err := s.applyNormal(e); err != nil {
			return err
		}
	case raftpb.EntryType_EntryConfChange:
		cc := new(raftpb.ConfChange)
		if err := proto.Unmarshal(e.GetData(), cc); err != nil {
			return fmt.Errorf("entry %d: decode conf change: %w", index, err)
		}
		if err := s.applyConfChange(e, cc, already); err != nil {
			return err
		}
	default:
		s.log.Warn("ignoring an entry of an unsupported type", "index", index, "type", e.GetType().String())
	}
	if !already {
		s.appliedIndex, s.appliedTerm = index, e.GetTerm()
	}
	s.forwarded.Applied(e.GetTerm())
	return nil
}

func (s *Server) applyNormal(e *raftpb.Entry) error {
	w := s.st().Write()
	if err := w.SetConsistentIndex(e.GetIndex(), e.GetTerm()); err != nil {
		w.End()
		return fmt.Errorf("entry %d: %w", e.GetIndex(), err)
	}
	if len(e.GetData()) == 0 { // a new leader's empty entry
		return w.End()
	}
	req, err := s.entryRequest(e.GetData())
	if err != nil {
		// Not ours to fail on: record it as applied and carry on.
		s.log.Error("skipping an entry that does not decode", "index", e.GetIndex(), "err", err)
		return w.End()
	}
	start := time.Now()
	res := s.applyRequest(w, req, e.GetIndex())
	s.observeApply(req, res, start)
	failpoint.Hit("applyBeforeConsistentIndex")
	if err := w.End(); err != nil {
		return fmt.Errorf("entry %d: %w", e.GetIndex(), err)
	}
	if req.DowngradeInfoSet != nil {
		s.checkClusterVersion() // now that the leader reads the new downgrade
	}
	s.waiters.Trigger(requestID(req), res)
	return nil
}

// entryRequest returns the request of a normal entry: the proposer's own
// when it was proposed here and still waits, rather than a decoded copy.
func (s *Server) entryRequest(data []byte) (*pb.InternalRaftRequest, error) {
	if id, ok := peekRequestID(data); ok {
		if req := s.proposal(id, data); req != nil {
			return req, nil
		}
	}
	req := new(pb.InternalRaftRequest)
	return req, proto.Unmarshal(data, req)
}

// peekRequestID reads the ID of an encoded InternalRaftRequest (see
// requestID) without decoding the rest. As in decoding, the last value of
// a field counts, and headers that appear more than once merge.
func peekRequestID(data []byte) (uint64, bool) {
	var id, headerID uint64
	var found, headerFound bool
	ok := walkFields(data, func(num protowire.Number, v uint64) {
		if num == internalRaftRequestID {
			id, found = v, true
		}
	}, func(num protowire.Number, msg []byte) bool {
		if num != internalRaftRequestHeader {
			return true
		}
		return walkFields(msg, func(num protowire.Number, v uint64) {
			if num == requestHeaderID {
				headerID, headerFound = v, true
			}
		}, nil)
	})
	if !ok {
		return 0, false
	}
	if headerFound {
		return headerID, true
	}
	return id, found
}

// Field numbers of etcdserverpb.InternalRaftRequest and RequestHeader.
const (
	internalRaftRequestID     = 1
	internalRaftRequestHeader = 100
	requestHeaderID           = 1
)

// walkFields walks the top-level fields of an encoded message,
// calling varint for each varint field and message (if not nil) for each
// length-delimited one; false if the message does not parse or message said
// so.
func walkFields(data []byte, varint func(protowire.Number, uint64), message func(protowire.Number, []byte) bool) bool {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return false
		}
		data = data[n:]
		switch typ {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(data)
			if n < 0 {
				return false
			}
			varint(num, v)
			data = data[n:]
		case protowire.BytesType:
			msg, n := protowire.ConsumeBytes(data)
			if n < 0 || (message != nil && !message(num, msg)) {
				return false
			}
			data = data[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, data)
			if n < 0 {
				return false
			}
			data = data[n:]
		}
	}
	return true
}

func requestID(req *pb.InternalRaftRequest) uint64 {
	if req.Header != nil {
		return req.Header.ID
	}
	return req.ID
}

// applyRequest runs one request, from the entry at index, in the entry's
// write transaction.
func (s *Server) applyRequest(w *store.WriteTxn, req *pb.InternalRaftRequest, index uint64) applyResult {
	// auth: the writer's permissions, as of this point of the log; then the
	// Auth* requests, which the auth store applies (auth.go).
	if err := s.checkApplyPermission(req); err != nil {
		return applyResult{err: err}
	}
	if auth.IsAuthRequest(req) {
		return s.applyAuth(w, req, index)
	}
	if s.alarms.NoSpace() && writesData(req) {
		return applyResult{err: ErrNoSpace}
	}
	if s.alarms.Corrupt() && alarm.RefusedWhenCorrupt(req) {
		return applyResult{err: ErrCorrupt}
	}
	// A put (alone or in a txn) may name only a lease that exists at this
	// point of the log, as in etcd; else it fails and writes nothing.
	w.CheckLeases(s.lessor.CheckLease)
	switch {
	case req.Put != nil:
		resp, err := w.ExecPut(req.Put)
		return applyResult{resp: resp, err: err}
	case req.DeleteRange != nil:
		resp, err := w.ExecDeleteRange(req.DeleteRange)
		return applyResult{resp: resp, err: err}
	case req.Txn != nil:
		resp, err := w.ExecTxn(req.Txn)
		return applyResult{resp: resp, err: err}
	case req.Compaction != nil:
		resp, physc, err := w.ExecCompaction(req.Compaction)
		return applyResult{resp: resp, err: err, physc: physc}
	case req.LeaseGrant != nil, req.LeaseRevoke != nil, req.LeaseCheckpoint != nil:
		return s.applyLease(w, req)
	case req.Alarm != nil:
		resp, err := s.alarms.Apply(w, req.Alarm)
		return applyResult{resp: resp, err: err}
	case req.ClusterMemberAttrSet != nil:
		return applyResult{err: s.applyMemberAttrs(w, req)}
	case req.ClusterVersionSet != nil:
		return applyResult{err: s.applyClusterVersion(w.Backend(), req.ClusterVersionSet.Ver)}
	case req.DowngradeInfoSet != nil:
		return applyDowngrade(w.Backend(), req.DowngradeInfoSet)
	}
	return applyResult{err: fmt.Errorf("unsupported request")}
}

// writesData reports whether a request may grow the db; those are refused
// while the NOSPACE alarm is raised.
func writesData(req *pb.InternalRaftRequest) bool {
	if req.Put != nil || req.LeaseGrant != nil {
		return true
	}
	if req.Txn != nil {
		return txnHasPut(req.Txn)
	}
	return false
}

func txnHasPut(t *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{t.Success, t.Failure} {
		for _, op := range ops {
			if op.GetRequestPut() != nil || (op.GetRequestTxn() != nil && txnHasPut(op.GetRequestTxn())) {
				return true
			}
		}
	}
	return false
}

func (s *Server) applyMemberAttrs(w *store.WriteTxn, req *pb.InternalRaftRequest) error {
	a := req.ClusterMemberAttrSet
	m, ok := s.members.get(a.Member_ID)
	if !ok {
		return ErrMemberNotFound
	}
	m.Name = a.MemberAttributes.GetName()
	m.ClientURLs = a.MemberAttributes.GetClientUrls()
	return s.members.save(w.Backend(), &m)
}

// applyConfChange changes the membership and tells raft.
func (s *Server) applyConfChange(e *raftpb.Entry, cc *raftpb.ConfChange, already bool) error {
	var result error
	if cluster.RemovesLastVoter(s.confState, cc) {
		s.log.Warn("refused a conf change that removes the last voter", "member-id", fmt.Sprintf("%x", cc.GetNodeId()), "index", e.GetIndex())
		result = ErrNotEnoughStarted
	}
	s.confs.Applying.Lock()
	if !already {
		w := s.st().Write()
		if err := w.SetConsistentIndex(e.GetIndex(), e.GetTerm()); err != nil {
			w.End()
			s.confs.Applying.Unlock()
			return err
		}
		if result == nil {
			result = s.applyMembershipChange(w.Backend(), cc)
		}
		if err := w.End(); err != nil {
			s.confs.Applying.Unlock()
			return err
		}
	}
	if result != nil {
		// Refused: raft still has to see the entry, as a change of node 0,
		// which it ignores; its proposer waits under its ID.
		cc = &raftpb.ConfChange{Id: cc.Id, Type: cc.Type, NodeId: proto.Uint64(0)}
	}
	s.confState = s.node.ApplyConfChange(cc)
	s.confs.Record(e.GetIndex(), s.confState)
	s.confs.Applying.Unlock()
	if result == nil {
		s.updatePeers(cc)
	}
	if !already {
		s.waiters.Trigger(cc.GetId(), applyResult{err: result})
	}
	if cc.GetType() == raftpb.ConfChangeType_ConfChangeRemoveNode && cc.GetNodeId() == s.id && result == nil {
		s.log.Warn("this member was removed from the cluster; stopping")
		go s.Stop()
	}
	return nil
}

func (s *Server) applyMembershipChange(wt *backend.WriteTx, cc *raftpb.ConfChange) error {
	id := cc.GetNodeId()
	switch cc.GetType() {
	case raftpb.ConfChangeType_ConfChangeAddNode, raftpb.ConfChangeType_ConfChangeAddLearnerNode:
		m := new(Member)
		if err := json.Unmarshal(cc.GetContext(), m); err != nil {
			return fmt.Errorf("conf change for %x: member context: %w", id, err)
		}
		if s.members.isRemoved(id) {
			return ErrMemberIDRemoved
		}
		if cur, ok := s.members.get(id); ok {
			if cur.IsLearner && cc.GetType() == raftpb.ConfChangeType_ConfChangeAddNode {
				cur.IsLearner = false // promotion
				s.log.Info("member promoted", "id", fmt.Sprintf("%x", id), "name", cur.Name)
				return s.members.save(wt, &cur)
			}
			// A new cluster's members are known from --initial-cluster before
			// their entries apply; they are saved now, with the consistent
			// index, or a member killed before its first attribute update
			// would restart with no members, and so no peers.
			return s.members.save(wt, &cur)
		}
		m.IsLearner = cc.GetType() == raftpb.ConfChangeType_ConfChangeAddLearnerNode
		s.log.Info("member added", "id", fmt.Sprintf("%x", id), "peer-urls", m.PeerURLs, "learner", m.IsLearner)
		return s.members.save(wt, m)
	case raftpb.ConfChangeType_ConfChangeRemoveNode:
		if _, ok := s.members.get(id); !ok {
			return ErrMemberNotFound
		}
		s.log.Info("member removed", "id", fmt.Sprintf("%x", id))
		return s.members.remove(wt, id)
	case raftpb.ConfChangeType_ConfChangeUpdateNode:
		m := new(Member)
		if err := json.Unmarshal(cc.GetContext(), m); err != nil {
			return fmt.Errorf("conf change for %x: member context: %w", id, err)
		}
		cur, ok := s.members.get(id)
		if !ok {
			return ErrMemberNotFound
		}
		cur.PeerURLs = m.PeerURLs
		return s.members.save(wt, &cur)
	}
	return nil
}

func (s *Server) updatePeers(cc *raftpb.ConfChange) {
	id := cc.GetNodeId()
	switch cc.GetType() {
	case raftpb.ConfChangeType_ConfChangeRemoveNode:
		s.transport.RemovePeer(id)
	default:
		if m, ok := s.members.get(id); ok {
			s.transport.AddPeer(id, m.PeerURLs)
		}
	}
}

// maybeSnapshot takes a raft snapshot once --snapshot-count entries have
// been applied since the last one, or when an entry forced one, and
// compacts the raft log behind it.
func (s *Server) maybeSnapshot() error {
	if s.appliedIndex <= s.snapshotIndex {
		s.snapshotForced = false // a snapshot as new is there, received from the leader
		return nil
	}
	if s.appliedIndex-s.snapshotIndex <= s.cfg.SnapshotCount && !s.snapshotForced {
		return nil
	}
	// A db received with a snapshot from the leader is as new as the
	// leader's was when it sent it, which can be past the entries this
	// member's log holds yet; raft takes no snapshot past its log (it
	// panics), so this one waits until the log reaches the applied index.
	if last, err := s.storage.LastIndex(); err != nil || s.appliedIndex > last {
		return err
	}
	// The snapshot needs the db to hold what it covers; while another commit or a
	// defragmentation holds the file, it waits for a later entry rather than hold up
	// the apply loop, until it is overdue (twice the entries it is due after).
	committed, err := s.st().Backend().CommitUnlessBusy(s.appliedIndex-s.snapshotIndex > 2*s.cfg.SnapshotCount)
	if err != nil || !committed {
		return err
	}
	s.snapshotForced = false
	data, err := s.snapshotData()
	if err != nil {
		return err
	}
	snap, err := s.storage.CreateSnapshot(s.appliedIndex, s.confState, data)
	if errors.Is(err, raft.ErrSnapOutOfDate) {
		return nil // raft holds a snapshot as new, received from the leader
	}
	if err != nil {
		return fmt.Errorf("create snapshot at %d: %w", s.appliedIndex, err)
	}
	if err := s.persistSnapshot(snap); err != nil {
		return err
	}
	s.snapshotIndex = s.appliedIndex
	s.confs.Forget(s.snapshotIndex)
	if err := s.wal.ReleaseLockTo(s.snapshotIndex); err != nil {
		return err
	}
	s.purge()
	s.log.Info("saved snapshot", "index", s.snapshotIndex)
	if s.snapshotIndex > s.cfg.SnapshotCatchUpEntries {
		compactTo := s.snapshotIndex - s.cfg.SnapshotCatchUpEntries
		if err := s.storage.Compact(compactTo); err != nil {
			s.log.Warn("compacting the raft log failed", "index", compactTo, "err", err)
		}
	}
	return nil
}

// installSnapshot replaces the db with the one received with a snapshot
// from the leader and reloads everything derived from it.
func (s *Server) installSnapshot(snap *raftpb.Snapshot) error {
	index := snap.GetMetadata().GetIndex()
	if index <= s.appliedIndex {
		// The db has it already (a db shipped with an earlier snapshot can
		// be newer than that snapshot); raft's storage holds the snapshot
		// now, so later snapshots must be newer.
		s.snapshotIndex = max(s.snapshotIndex, index)
		return nil
	}
	s.counts.applyingSnapshot.Store(true)
	st, err := s.replaceDB(index)
	s.counts.applyingSnapshot.Store(false)
	if err != nil {
		return fmt.Errorf("install snapshot at %d: %w", index, err)
	}
	for _, m := range s.members.list() {
		s.transport.AddPeer(m.ID, m.PeerURLs)
	}
	ci, term := st.ConsistentIndex()
	s.appliedIndex, s.appliedTerm = max(ci, index), term
	s.snapshotIndex = index
	s.confState = snap.GetMetadata().GetConfState()
	s.confs.Reset(index, s.confState)
	s.log.Info("installed snapshot from the leader", "index", index, "consistent-index", ci, "revision", st.Rev())
	return nil
}

// replaceDB puts the db received with the snapshot at index in the place of
// the member's db, and reloads what derives from it: members, alarms,
// leases, auth. Watch streams on the old store end (StoreReplaced).
func (s *Server) replaceDB(index uint64) (*store.Store, error) {
	received := s.receivedDBPath(index)
	if _, err := os.Stat(received); err != nil {
		return nil, fmt.Errorf("its db %s is missing: %w", received, err)
	}
	if err := s.st().Close(); err != nil {
		s.log.Warn("closing the old db failed", "err", err)
	}
	if err := os.Rename(received, s.cfg.DBPath()); err != nil {
		return nil, err
	}
	st, err := s.openStore()
	if err != nil {
		return nil, err
	}
	s.store.Store(st)
	next := make(chan struct{})
	close(*s.replaced.Swap(&next))
	if err := s.members.load(st); err != nil {
		return nil, err
	}
	if err := s.alarms.Load(st); err != nil {
		return nil, err
	}
	s.afterStoreReplaced(st)
	return st, nil
}
