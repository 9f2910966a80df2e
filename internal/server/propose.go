package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"
	"go.etcd.io/raft/v3"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/internal/leaderwatch"
)

// RequestTimeout bounds every proposal, whatever the client's deadline, as
// etcd's request timeout does: a proposal lost with a dead leader ends in
// ErrTimeout, which a client may retry, rather than waiting out a long
// client deadline.
func (s *Server) RequestTimeout() time.Duration {
	return 5*time.Second + 2*s.cfg.ElectionTimeout
}

// Propose replicates req through raft and returns its result once this
// member has applied it.
func (s *Server) Propose(ctx context.Context, req *pb.InternalRaftRequest) (proto.Message, error) {
	res, err := s.propose(ctx, req)
	if err != nil {
		return nil, err
	}
	return res.resp, res.err
}

// ProposeCompaction is Propose for a compaction; physical waits until the
// compacted revisions have left the backend.
func (s *Server) ProposeCompaction(ctx context.Context, req *pb.CompactionRequest, physical bool) (*pb.CompactionResponse, error) {
	res, err := s.propose(ctx, &pb.InternalRaftRequest{Compaction: req})
	if err != nil {
		return nil, err
	}
	if res.err != nil {
		return nil, res.err
	}
	if physical && res.physc != nil {
		select {
		case <-res.physc:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.stopc:
			return nil, ErrStopped
		}
	}
	return res.resp.(*pb.CompactionResponse), nil
}

// propose replicates req and waits for its result, timed for the metrics.
func (s *Server) propose(ctx context.Context, req *pb.InternalRaftRequest) (applyResult, error) {
	start := time.Now()
	res, err := s.replicate(ctx, req, start)
	s.metrics.Request(requestType(req), err == nil && res.err == nil, time.Since(start))
	return res, err
}

// replicate proposes req, which started at start, and waits for its result.
func (s *Server) replicate(ctx context.Context, req *pb.InternalRaftRequest, start time.Time) (applyResult, error) {
	id := s.reqIDs.Next()
	req.Header = &pb.RequestHeader{ID: id}
	if ai, ok := auth.InfoFrom(ctx); ok { // auth: who proposes, checked at apply
		req.Header.Username, req.Header.AuthRevision = ai.Username, ai.Revision
	}
	data, err := proto.Marshal(req)
	if err != nil {
		return applyResult{}, err
	}
	if len(data) > s.cfg.MaxRequestBytes {
		return applyResult{}, ErrRequestTooLarge
	}
	timeout := s.deadlines.After(s.RequestTimeout())
	if err := s.waitLeader(ctx, timeout); err != nil {
		return applyResult{}, err
	}
	ch := s.waiters.Register(id, proposal{req, data})
	lost, err := s.proposeAcrossTransfer(ctx, timeout, data)
	if err != nil {
		s.waiters.Cancel(id)
		return applyResult{}, s.proposeError(err)
	}
	select {
	case res := <-ch:
		return res, nil
	case <-lost:
		s.waiters.Cancel(id)
		s.proposalsFailed.Add(1)
		return applyResult{}, ErrTimeoutDueToLeaderFail
	case <-ctx.Done():
		s.waiters.Cancel(id)
		return applyResult{}, s.waitError(ctx, start)
	case <-timeout:
		s.waiters.Cancel(id)
		return applyResult{}, s.waitError(ctx, start)
	case <-s.stopc:
		return applyResult{}, ErrStopped
	}
}

// waitLeader returns once the member knows a leader. As etcd's, a request
// that reaches a member between leaders waits for the election rather than
// fail: a client does not retry a write, which here was not proposed. It
// fails with ctx's error when the client gives up first, and as a proposal
// that timed out when the request timeout fires first (etcd answers both
// so).
func (s *Server) waitLeader(ctx context.Context, timeout <-chan struct{}) error {
	start := time.Now()
	for {
		changed := s.leaderless.Changed()
		if s.leaderID.Load() != 0 {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			s.proposalsFailed.Add(1)
			return ctx.Err() // what etcd answers: raft held the proposal until then
		case <-timeout:
			return s.waitError(ctx, start)
		case <-s.stopc:
			return ErrStopped
		}
	}
}

// waitError is the error of a proposal raft took at start but that was not
// applied before ctx ended or the request timed out: its outcome is
// unknown, so never ErrNoLeader.
func (s *Server) waitError(ctx context.Context, start time.Time) error {
	s.proposalsFailed.Add(1)
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	var voters []uint64
	for _, m := range s.members.list() {
		if !m.IsLearner {
			voters = append(voters, m.ID)
		}
	}
	cause := leaderwatch.ProposalTimeout{
		Start: start, Elected: s.leaderless.Elected(), Election: s.cfg.ElectionTimeout,
		Self: s.id, Lead: s.leaderID.Load(), Voters: voters, ActiveSince: s.transport.ActiveSince,
	}.Cause()
	switch cause {
	case leaderwatch.LeaderFailed:
		return ErrTimeoutDueToLeaderFail
	case leaderwatch.ConnectionLost:
		return ErrTimeoutDueToConnectionLost
	}
	return ErrTimeout
}

// proposeAcrossTransfer appends data to the log, or forwards it to the
// leader; lost is closed if the leader it was forwarded to is found gone
// before it is applied (leaderwatch.Forwarded). raft drops proposals on a leader
// handing leadership over and on a member that has just lost its leader
// (before the member has seen that it did); such a proposal was appended
// nowhere, so it waits for the next leader and is proposed again (as a
// forwarded one is in holdProposal).
func (s *Server) proposeAcrossTransfer(ctx context.Context, timeout <-chan struct{}, data []byte) (lost <-chan struct{}, err error) {
	for {
		lead, term := s.leaderID.Load(), s.term.Load()
		err := s.node.Propose(data)
		if err == nil && lead != s.id {
			return s.forwarded.Lost(lead, term), nil
		}
		if !errors.Is(err, raft.ErrProposalDropped) {
			return nil, err
		}
		if err := s.waitProposable(ctx, timeout); err != nil {
			return nil, err
		}
	}
}

// waitProposable waits, after raft dropped a proposal, until the leader
// changes or a heartbeat interval has passed (a change that came between
// the drop and the wait, or a transfer raft gave up, is seen then).
func (s *Server) waitProposable(ctx context.Context, timeout <-chan struct{}) error {
	changed := s.leaderless.Changed()
	t := time.NewTimer(s.cfg.HeartbeatInterval)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	case <-timeout:
		return ErrTimeout
	case <-s.stopc:
		return ErrStopped
	}
	return nil
}

// proposeError turns a proposal that raft did not take (err from
// node.Propose) into etcd's error. ErrNoLeader says it was not proposed, so
// a client may send it elsewhere.
func (s *Server) proposeError(err error) error {
	s.proposalsFailed.Add(1)
	if errors.Is(err, raft.ErrProposalDropped) || s.leaderID.Load() == 0 {
		return ErrNoLeader
	}
	return err
}

// LinearizableReadNotify returns once this member has applied everything
// committed before the call, as confirmed by the leader (ReadIndex).
// Concurrent callers share one ReadIndex round. A leader that is the only
// voter needs no round: raft would answer with its commit index at once.
// A member without a leader waits for one (waitLeader); a read that was
// waiting for its read index when the member lost its leader fails as
// etcd's does, with ErrLeaderChanged.
func (s *Server) LinearizableReadNotify(ctx context.Context) error {
	if index, ok := s.node.SoleVoterReadIndex(); ok {
		return s.waitApplied(ctx, index)
	}
	if s.leaderID.Load() == 0 {
		if err := s.waitLeader(ctx, s.deadlines.After(s.RequestTimeout())); err != nil {
			return err
		}
	}
	changed := s.leaderless.Changed()
	if s.leaderID.Load() == 0 {
		return ErrLeaderChanged
	}
	done := make(chan error, 1)
	readc := s.readc // nil once the read is queued
	for {
		select {
		case readc <- done:
			readc = nil
		case err := <-done:
			return err
		case <-changed:
			changed = s.leaderless.Changed()
			if s.leaderID.Load() == 0 {
				return ErrLeaderChanged
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-s.stopc:
			return ErrStopped
		}
	}
}

// waitApplied waits until this member has applied index, or the request
// timeout has passed.
func (s *Server) waitApplied(ctx context.Context, index uint64) error {
	applied := s.applied.Wait(index)
	select {
	case <-applied:
		return nil // a read of a member that is not behind: without a timer
	default:
	}
	timeout := time.NewTimer(s.RequestTimeout())
	defer timeout.Stop()
	select {
	case <-applied:
		return nil
	case <-timeout.C:
		return ErrTimeout
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stopc:
		return ErrStopped
	}
}

// readIndexLoop batches the waiting linearizable reads, and the requests
// for a confirmation of the leadership, into ReadIndex rounds. On the
// leader each round that succeeds is a confirmation of its leadership
// (lease.go).
func (s *Server) readIndexLoop() {
	defer s.wg.Done()
	var seq uint64
	for {
		var batch []chan error
		select {
		case <-s.stopc:
			return
		case first := <-s.readc:
			batch = append(batch, first)
		case <-s.confirmc:
		}
	drain:
		for {
			select {
			case more := <-s.readc:
				batch = append(batch, more)
			case <-s.confirmc:
			default:
				break drain
			}
		}
		seq++
		confirming := s.startConfirmation()
		err := s.readIndex(seq)
		if err != nil {
			s.counts.readIndexFailed.Add(1)
		} else {
			confirming.done()
		}
		for _, ch := range batch {
			ch <- err
		}
	}
}

// readIndex runs one ReadIndex round and waits until it is applied.
func (s *Server) readIndex(seq uint64) error {
	rctx := binary.BigEndian.AppendUint64(nil, seq)
	timeout := time.NewTimer(s.RequestTimeout())
	defer timeout.Stop()
	retry := time.NewTicker(s.cfg.ElectionTimeout / 2)
	defer retry.Stop()
	changed := s.leaderless.Changed()
	s.node.ReadIndex(rctx)
	for {
		select {
		case <-changed:
			// A request sent to a leader that has just stepped down (a
			// paused leader that comes back, say) is lost: ask the new
			// one at once instead of at the next retry.
			changed = s.leaderless.Changed()
			if s.leaderID.Load() == 0 {
				return ErrLeaderChanged // as etcd answers a read its leader left
			}
			s.node.ReadIndex(rctx)
		case rs := <-s.readState:
			if string(rs.RequestCtx) != string(rctx) {
				s.counts.slowReadIndexes.Add(1)
				continue // an older round's answer
			}
			select {
			case <-s.applied.Wait(rs.Index):
				return nil
			case <-timeout.C:
				return ErrTimeout
			case <-s.stopc:
				return ErrStopped
			}
		case <-retry.C:
			if s.leaderID.Load() == 0 {
				continue
			}
			s.node.ReadIndex(rctx) // the request may have been dropped during an election
		case <-timeout.C:
			s.counts.slowReadIndexes.Add(1)
			if s.leaderID.Load() == 0 {
				return ErrNoLeader
			}
			return ErrTimeout
		case <-s.stopc:
			return ErrStopped
		}
	}
}

// publishAttributes proposes this member's name and client URLs until the
// cluster has them.
func (s *Server) publishAttributes() {
	defer s.wg.Done()
	req := &pb.InternalRaftRequest{ClusterMemberAttrSet: &membershippb.ClusterMemberAttrSetRequest{
		Member_ID:        s.id,
		MemberAttributes: &membershippb.Attributes{Name: s.cfg.Name, ClientUrls: s.cfg.AdvertiseClientURLs},
	}}
	for !s.stopping() {
		changed := s.leaderless.Changed()
		ctx, cancel := context.WithTimeout(context.Background(), s.RequestTimeout())
		_, err := s.Propose(ctx, proto.Clone(req).(*pb.InternalRaftRequest))
		cancel()
		if err == nil {
			s.log.Info("published member attributes", "name", s.cfg.Name, "client-urls", s.cfg.AdvertiseClientURLs)
			close(s.ready)
			return
		}
		retry := time.After(s.cfg.ElectionTimeout)
		if errors.Is(err, ErrNoLeader) {
			retry = nil // try again as soon as there is a leader
		}
		select {
		case <-s.stopc:
			return
		case <-changed:
		case <-retry:
		}
	}
}

// Members returns the cluster's members.
func (s *Server) Members() []Member { return s.members.list() }

// Member returns one member.
func (s *Server) Member(id uint64) (Member, bool) { return s.members.get(id) }

// AppliedIndex and CommittedIndex report raft progress.
func (s *Server) AppliedIndex() uint64 {
	return s.applied.Current()
}

// CommittedIndex returns the last commit index this member knows.
func (s *Server) CommittedIndex() uint64 { return s.commit.Load() }

// RaftStatus returns raft's view of the cluster (progress of followers on
// the leader).
func (s *Server) RaftStatus() raft.Status { return s.node.Status() }

// proposal is a request proposed here and its encoding, which the apply
// loop uses rather than decode the entry again (zero for a conf change).
type proposal struct {
	req  *pb.InternalRaftRequest
	data []byte
}

// proposal returns the request proposed here under id whose encoding is
// data, if its proposer still waits.
func (s *Server) proposal(id uint64, data []byte) *pb.InternalRaftRequest {
	p, _ := s.waiters.Value(id)
	if p.req == nil || !bytes.Equal(p.data, data) {
		return nil
	}
	return p.req
}
