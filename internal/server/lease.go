package server

import (
	"context"
	"errors"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"

	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/internal/lease"
	"github.com/cairnkv/cairn/pkg/store"
)

// applyLease applies lease grants, revocations and checkpoints.
func (s *Server) applyLease(w *store.WriteTxn, req *pb.InternalRaftRequest) applyResult {
	hdr := func() *pb.ResponseHeader { return &pb.ResponseHeader{Revision: w.Rev()} }
	switch {
	case req.LeaseGrant != nil:
		l, err := s.lessor.Grant(w, req.LeaseGrant.ID, req.LeaseGrant.TTL)
		if err != nil {
			return applyResult{err: err}
		}
		s.metrics.LeaseTTL.Observe(float64(l.TTL))
		return applyResult{resp: &pb.LeaseGrantResponse{Header: hdr(), ID: l.ID, TTL: l.TTL}}
	case req.LeaseRevoke != nil:
		if err := s.lessor.Revoke(w, req.LeaseRevoke.ID); err != nil {
			return applyResult{err: err}
		}
		return applyResult{resp: &pb.LeaseRevokeResponse{Header: hdr()}}
	default:
		for _, c := range req.LeaseCheckpoint.GetCheckpoints() {
			if err := s.lessor.Checkpoint(w, c.ID, c.Remaining_TTL); err != nil && err != lease.ErrLeaseNotFound {
				return applyResult{err: err}
			}
		}
		return applyResult{resp: &pb.LeaseCheckpointResponse{Header: hdr()}}
	}
}

// Lessor returns the member's lessor, for queries.
func (s *Server) Lessor() *lease.Lessor { return s.lessor }

// LeaseGrant proposes a new lease; ID 0 asks the member to choose one, from
// its request ID generator as etcd does (so IDs start with the member's
// low 16 bits).
func (s *Server) LeaseGrant(ctx context.Context, req *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	for req.ID == 0 {
		req.ID = int64(s.reqIDs.get() &^ (1 << 63))
	}
	resp, err := s.Propose(ctx, &pb.InternalRaftRequest{LeaseGrant: req})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.LeaseGrantResponse), nil
}

// LeaseRevoke proposes revoking a lease and deleting its keys.
func (s *Server) LeaseRevoke(ctx context.Context, req *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	resp, err := s.Propose(ctx, &pb.InternalRaftRequest{LeaseRevoke: req})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.LeaseRevokeResponse), nil
}

// leaderChanged hands lease expiry to the new leader, which also checks
// the cluster version.
func (s *Server) leaderChanged(lead uint64) {
	if lead == s.id {
		s.lessor.Promote(s.cfg.ElectionTimeout)
		s.checkClusterVersion()
	} else {
		s.lessor.Demote()
	}
}

// afterStoreReplaced rebuilds what derives from the db after a snapshot.
func (s *Server) afterStoreReplaced(st *store.Store) {
	if err := s.lessor.Recover(st); err != nil {
		s.log.Error("recovering leases from the snapshot failed", "err", err)
	}
	if err := s.loadAuth(st); err != nil { // auth: added
		s.log.Error("loading the auth state from the snapshot failed", "err", err)
	}
}

// leaseLoop, on the leader, proposes the revocation of expired leases and
// the checkpoints of long ones.
func (s *Server) leaseLoop() {
	defer s.wg.Done()
	t := time.NewTicker(lease.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stopc:
			return
		case <-t.C:
		}
		if s.leaderID.Load() != s.id {
			continue
		}
		if expired := s.lessor.Tick(); len(expired) > 0 {
			go s.revokeExpired(expired)
		}
		if cps := s.lessor.CheckpointsDue(); len(cps) > 0 {
			req := &pb.LeaseCheckpointRequest{}
			for _, c := range cps {
				req.Checkpoints = append(req.Checkpoints, &pb.LeaseCheckpoint{ID: c.ID, Remaining_TTL: c.RemainingTTL})
			}
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), s.RequestTimeout())
				defer cancel()
				s.Propose(ctx, &pb.InternalRaftRequest{LeaseCheckpoint: req})
			}()
		}
	}
}

// revokeExpired proposes the revocation of leases that Tick found expired,
// once a quorum has confirmed, in a round begun after they expired, that
// this member still leads. A leader whose disk stalled, or that was cut
// off, may believe it leads long after another member was elected and
// renewed the leases whose keep-alives went there; its revoke, forwarded to
// the new leader once it learns of it, would be committed. (etcd 3.7.3
// checks only that the member still believes it leads.)
func (s *Server) revokeExpired(expired []lease.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), s.RequestTimeout())
	defer cancel()
	c, err := s.confirmLeadership(ctx)
	if err != nil {
		s.log.Warn("not revoking expired leases: this member's leadership is not confirmed", "leases", len(expired), "err", err)
		return
	}
	for _, l := range expired {
		if !s.lessor.ExpiredBefore(l.ID, c) {
			continue // renewed meanwhile, or a new term restarted its clock
		}
		go func(id int64) {
			ctx, cancel := context.WithTimeout(context.Background(), s.RequestTimeout())
			defer cancel()
			if s.auth.Enabled() {
				// auth: the member revokes expired leases as root, whatever
				// keys they carry.
				ctx = auth.WithInfo(ctx, s.auth.RootInfo())
			}
			_, err := s.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: id})
			switch {
			case err == nil:
				s.counts.leasesExpired.Add(1)
			case err != lease.ErrLeaseNotFound:
				s.log.Warn("revoking an expired lease failed", "lease", id, "err", err)
			}
		}(l.ID)
	}
}

// confirmLeadership runs a ReadIndex round, which raft's leader answers
// only once a quorum has acknowledged its heartbeats, and returns the
// lessor's record of it if this member led, in one term, from before the
// round began until it ended (a round that a member which stepped down
// meanwhile forwarded to the new leader confirms nothing).
func (s *Server) confirmLeadership(ctx context.Context) (lease.Confirmation, error) {
	c := s.lessor.StartConfirmation()
	before := s.node.Status()
	if before.RaftState != raft.StateLeader {
		return c, ErrNotLeader
	}
	if err := s.LinearizableReadNotify(ctx); err != nil {
		return c, err
	}
	if after := s.node.Status(); after.RaftState != raft.StateLeader || after.HardState.GetTerm() != before.HardState.GetTerm() {
		return c, ErrNotLeader
	}
	s.lessor.Confirmed(c)
	return c, nil
}

// renewAsLeader renews lease id on this member, if it is the leader and a
// quorum confirmed so less than half an election timeout ago (no other
// member can have been elected since); else it first runs a round of
// confirmation, for at most an election timeout. A leader whose disk or
// network stalls so stops answering keep-alives: its answer would promise
// a TTL that a new leader, whom the client's keep-alives do not reach, need
// not honour. Not the leader: lease.ErrNotPrimary.
func (s *Server) renewAsLeader(ctx context.Context, id int64) (int64, error) {
	if !s.lessor.IsPrimary() {
		return 0, lease.ErrNotPrimary
	}
	if !s.lessor.ConfirmedWithin(s.cfg.ElectionTimeout / 2) {
		cctx, cancel := context.WithTimeout(ctx, s.cfg.ElectionTimeout)
		defer cancel()
		if _, err := s.confirmLeadership(cctx); err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				err = ErrTimeout
			}
			return 0, err
		}
	}
	return s.lessor.Renew(id)
}
