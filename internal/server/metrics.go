package server

import (
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/metrics"
	"github.com/cairnkv/cairn/internal/transport"
	"github.com/cairnkv/cairn/pkg/store"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// memberCounts are what the member counts of itself for its metrics.
type memberCounts struct {
	slowApplies, readIndexFailed, slowReadIndexes atomic.Uint64
	learnerPromotes, leasesExpired                atomic.Uint64
	applyingSnapshot                              atomic.Bool
}

// Counts is a reading of the member's counts.
type Counts struct {
	LeaderChanges, ProposalsFailed                uint64
	SlowApplies, ReadIndexFailed, SlowReadIndexes uint64
	LearnerPromotes, LeasesExpired                uint64
	ApplyingSnapshot                              bool
}

// Counts reads the member's counts.
func (s *Server) Counts() Counts {
	c := &s.counts
	return Counts{
		LeaderChanges: s.leaderChanges.Load(), ProposalsFailed: s.proposalsFailed.Load(),
		SlowApplies: c.slowApplies.Load(), ReadIndexFailed: c.readIndexFailed.Load(), SlowReadIndexes: c.slowReadIndexes.Load(),
		LearnerPromotes: c.learnerPromotes.Load(), LeasesExpired: c.leasesExpired.Load(),
		ApplyingSnapshot: c.applyingSnapshot.Load(),
	}
}

// Metrics returns the families the member observes as it runs.
func (s *Server) Metrics() *metrics.Member { return s.metrics }

// StoreStats returns the counts of the member's stores, kept across a
// store replaced by a snapshot.
func (s *Server) StoreStats() *store.Stats { return s.storeStats }

// Transport returns the member's peer transport, for its counts.
func (s *Server) Transport() *transport.Transport { return s.transport }

// newStoreStats are the store counts of a member, with hooks into m.
func newStoreStats(m *metrics.Member) *store.Stats {
	ms := func(h interface{ Observe(float64) }) func(time.Duration) {
		return func(d time.Duration) { h.Observe(float64(d) / float64(time.Millisecond)) }
	}
	return &store.Stats{
		OnCommit: func(d time.Duration) { m.BackendCommit.Observe(d.Seconds()) },
		OnBoltCommit: func(rebalance, spill, write time.Duration) {
			m.BoltRebalance.Observe(rebalance.Seconds())
			m.BoltSpill.Observe(spill.Seconds())
			m.BoltWrite.Observe(write.Seconds())
		},
		OnIndexCompaction: ms(m.IndexCompactionPause),
		OnCompactionBatch: ms(m.DBCompactionPause),
		OnCompaction:      ms(m.DBCompactionTotal),
	}
}

// walOptions are the options of the member's WAL writer: the default
// policy, with its writes and fsyncs timed.
func (s *Server) walOptions() walfmt.Options {
	m := s.metrics
	opts := s.cfg.WALOptions()
	opts.OnWrite = func(n int, took time.Duration) {
		m.WALWrite.Observe(took.Seconds())
		m.WALWriteBytes.Add(float64(n))
	}
	opts.OnSync = func(took time.Duration) { m.WALFsync.Observe(took.Seconds()) }
	return opts
}

// openStore opens the member's db with the member's counts.
func (s *Server) openStore() (*store.Store, error) {
	cfg := s.cfg.StoreConfig(s.cfg.DBPath())
	cfg.Stats = s.storeStats
	return store.Open(cfg)
}

// requestType names a request as etcd's metrics do (the apply op and the
// request type labels).
func requestType(req *pb.InternalRaftRequest) string {
	switch {
	case req.Put != nil:
		return "Put"
	case req.DeleteRange != nil:
		return "DeleteRange"
	case req.Txn != nil:
		return "Txn"
	case req.Range != nil:
		return "Range"
	case req.Compaction != nil:
		return "Compaction"
	case req.LeaseGrant != nil:
		return "LeaseGrant"
	case req.LeaseRevoke != nil:
		return "LeaseRevoke"
	case req.LeaseCheckpoint != nil:
		return "LeaseCheckpoint"
	case req.Alarm != nil:
		return "Alarm"
	case req.ClusterMemberAttrSet != nil:
		return "ClusterMemberAttrSet"
	case req.ClusterVersionSet != nil:
		return "ClusterVersionSet"
	case req.DowngradeInfoSet != nil:
		return "DowngradeInfoSet"
	case req.DowngradeVersionTest != nil:
		return "DowngradeVersionTest"
	case req.Authenticate != nil:
		return "Authenticate"
	case req.AuthEnable != nil:
		return "AuthEnable"
	case req.AuthDisable != nil:
		return "AuthDisable"
	case req.AuthStatus != nil:
		return "AuthStatus"
	case req.AuthUserAdd != nil:
		return "AuthUserAdd"
	case req.AuthUserDelete != nil:
		return "AuthUserDelete"
	case req.AuthUserGet != nil:
		return "AuthUserGet"
	case req.AuthUserChangePassword != nil:
		return "AuthUserChangePassword"
	case req.AuthUserGrantRole != nil:
		return "AuthUserGrantRole"
	case req.AuthUserRevokeRole != nil:
		return "AuthUserRevokeRole"
	case req.AuthUserList != nil:
		return "AuthUserList"
	case req.AuthRoleAdd != nil:
		return "AuthRoleAdd"
	case req.AuthRoleDelete != nil:
		return "AuthRoleDelete"
	case req.AuthRoleGet != nil:
		return "AuthRoleGet"
	case req.AuthRoleGrantPermission != nil:
		return "AuthRoleGrantPermission"
	case req.AuthRoleRevokePermission != nil:
		return "AuthRoleRevokePermission"
	case req.AuthRoleList != nil:
		return "AuthRoleList"
	}
	return "Unknown"
}

// observeApply records the apply of req, which took since start.
func (s *Server) observeApply(req *pb.InternalRaftRequest, res applyResult, start time.Time) {
	took := time.Since(start)
	s.metrics.Apply(requestType(req), res.err == nil, took)
	if took > s.cfg.WarningApplyDuration { // a slow apply: counted and logged, as etcd's
		s.counts.slowApplies.Add(1)
		text := req.String() // cut: a value may be megabytes
		s.log.Warn("apply request took too long", "took", took.String(), "expected-duration", s.cfg.WarningApplyDuration.String(),
			"prefix", "", "request", text[:min(len(text), 256)], "request-size", proto.Size(req))
	}
}
