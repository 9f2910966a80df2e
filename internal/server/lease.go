package server

import (
	"context"
	"errors"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

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
		req.ID = int64(s.reqIDs.Next() &^ (1 << 63))
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
	c := s.lessor.StartConfirmation()
	if err := s.awaitConfirmation(ctx, func() (bool, error) { return s.lessor.ConfirmedSince(c) }); err != nil {
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

// A confirming is a round of the read loop begun while this member led:
// raft's leader answers a ReadIndex only once a quorum has acknowledged
// heartbeats sent after it was asked, and a follower grants no vote for an
// election timeout after a heartbeat, less a tick of its timer (raft's
// CheckQuorum lease). So the round, if it succeeds while the member still
// leads in the same term, confirms that no other member can be elected
// before an election timeout, less a heartbeat interval, from its start. A
// leader handing leadership over confirms nothing: its transferee
// campaigns without waiting for that.
type confirming struct {
	s    *Server // nil: the round confirms nothing
	c    lease.Confirmation
	term uint64
}

// startConfirmation notes the start of a read loop round.
func (s *Server) startConfirmation() confirming {
	if !s.lessor.IsPrimary() {
		return confirming{}
	}
	c := s.lessor.StartConfirmation()
	term, leading := s.node.Leading()
	if !leading {
		return confirming{}
	}
	return confirming{s: s, c: c, term: term}
}

// done records a round that succeeded.
func (r confirming) done() {
	if r.s == nil {
		return
	}
	if term, leading := r.s.node.Leading(); leading && term == r.term {
		r.s.lessor.Confirmed(r.c)
	}
}

// awaitConfirmation asks the read loop for rounds until confirmed reports
// true (or an error) after a round, or ctx ends.
func (s *Server) awaitConfirmation(ctx context.Context, confirmed func() (bool, error)) error {
	for {
		changed := s.lessor.ConfirmationChanged()
		if ok, err := confirmed(); ok || err != nil {
			return err
		}
		select {
		case s.confirmc <- struct{}{}:
		default: // a round is asked for already
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.stopc:
			return ErrStopped
		}
	}
}

// renewAsLeader renews lease id on this member, if it is the leader and a
// quorum confirmed so in a round begun less than renewWindow ago; else it
// waits for such a round, for as long again. Any round counts, one that a
// linearizable read asked for or one already under way when the keep-alive
// came, so that on a network whose round trips take most of an election
// timeout the leader still renews. A leader that has lost its quorum, or
// whose disk stalls, so stops answering keep-alives: its answer would
// promise a TTL that a new leader, whom the client's keep-alives do not
// reach, need not honour; the client's keep-alive fails in time to reach
// the new leader through another member. Not the leader:
// lease.ErrNotPrimary.
func (s *Server) renewAsLeader(ctx context.Context, id int64) (int64, error) {
	var ttl int64
	window := s.renewWindow()
	wctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	err := s.awaitConfirmation(wctx, func() (bool, error) {
		var err error
		ttl, err = s.lessor.Renew(id, window)
		if errors.Is(err, lease.ErrNotConfirmed) {
			return false, nil
		}
		return true, err
	})
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		err = ErrTimeout
	}
	return ttl, err
}

// renewWindow is how long after a confirming round began the leader may
// renew leases on it. No other member is elected within an election
// timeout less a heartbeat interval of the round's start (see confirming),
// and a new leader starts every lease's clock an election timeout late
// (lessor.Promote), so a renewal answered before both have passed promises
// no more than the new leader gives. (A lease with a checkpointed remaining
// TTL restarts from that on a new leader unless the renewal's clearing
// checkpoint was committed, whenever the renewal came, as on etcd.)
func (s *Server) renewWindow() time.Duration {
	return 2*s.cfg.ElectionTimeout - s.cfg.HeartbeatInterval
}
