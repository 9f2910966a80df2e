package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/cairnkv/cairn/internal/lease"
	"github.com/cairnkv/cairn/internal/peerquery"
)

// LeaseRenew renews a lease on the leader and returns its TTL.
func (s *Server) LeaseRenew(ctx context.Context, id int64) (int64, error) {
	return onLeader(ctx, s, func() (int64, error) { return s.renewAsLeader(ctx, id) },
		peerquery.PathLeaseRenew, peerquery.Query{ID: id}, func(a peerquery.Answer) int64 { return a.TTL })
}

// LeaseTimeToLive reports a lease's TTLs (and keys), from the leader.
func (s *Server) LeaseTimeToLive(ctx context.Context, id int64, keys bool) (lease.TTLInfo, error) {
	return onLeader(ctx, s, func() (lease.TTLInfo, error) { return s.lessor.TimeToLive(id, keys) },
		peerquery.PathLeaseTTL, peerquery.Query{ID: id, Keys: keys}, func(a peerquery.Answer) lease.TTLInfo { return a.Info })
}

// onLeader runs query on this member's lessor if it is the primary (see
// onPrimary), else asks the leader q at path and takes from its answer
// what the caller wants, asking again, of whoever leads then, when the
// leader changes before it answers (askLeaderAgain).
func onLeader[T any](ctx context.Context, s *Server, query func() (T, error), path string, q peerquery.Query, from func(peerquery.Answer) T) (T, error) {
	for {
		v, err := onPrimary(ctx, s, query)
		if !errors.Is(err, lease.ErrNotPrimary) {
			return v, err
		}
		ans, err := s.askLeaderAgain(ctx, path, q)
		if !errors.Is(err, errAskAgain) {
			return from(ans), err
		}
	}
}

// errAskAgain: the leader changed before it answered.
var errAskAgain = errors.New("the leader changed before it answered")

// askLeaderAgain is askLeader for a question that may be asked twice (a
// renewal, a query): without a leader, it waits for one as a proposal
// would; if the leader changes before it answers, it gives up on it with
// errAskAgain, for the caller to ask again, of this member if it leads now.
// A leader cut off from this member answers nothing until the cut heals,
// and the others elect another meanwhile; a keep-alive held for it would
// let the lease expire on the new leader.
func (s *Server) askLeaderAgain(ctx context.Context, path string, q peerquery.Query) (peerquery.Answer, error) {
	if s.leaderID.Load() == 0 {
		if err := s.waitLeader(ctx, s.deadlines.After(s.RequestTimeout())); err != nil {
			return peerquery.Answer{}, err
		}
	}
	changed := s.leaderless.UntilChange()
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(changed, cancel)()
	ans, err := s.askLeader(actx, path, q)
	if err != nil && ctx.Err() == nil && changed.Err() != nil {
		return ans, errAskAgain
	}
	return ans, err
}

// onPrimary runs a query of this member's lessor, which fails with
// lease.ErrNotPrimary unless this member is the leader. A lease granted a
// moment ago through another member may be committed but not yet applied
// here, so a lease not found is looked up again once this member has
// applied what it knows to be committed (as etcd's leader does).
func onPrimary[T any](ctx context.Context, s *Server, query func() (T, error)) (T, error) {
	v, err := query()
	if errors.Is(err, lease.ErrLeaseNotFound) {
		if err = s.waitCommittedApplied(ctx); err == nil {
			v, err = query()
		}
	}
	return v, err
}

// waitCommittedApplied returns once this member has applied every entry it
// knew to be committed at the call.
func (s *Server) waitCommittedApplied(ctx context.Context) error {
	select {
	case <-s.applied.Wait(s.commit.Load()):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stopc:
		return ErrStopped
	}
}

// askLeader asks the leader q at path (package peerquery), and returns its
// answer, or its error as this package's where there is one.
func (s *Server) askLeader(ctx context.Context, path string, q peerquery.Query) (peerquery.Answer, error) {
	lead := s.leaderID.Load()
	if lead == 0 {
		return peerquery.Answer{}, ErrNoLeader
	}
	m, ok := s.members.get(lead)
	if !ok || len(m.PeerURLs) == 0 {
		return peerquery.Answer{}, ErrNoLeader
	}
	ans, err := peerquery.Ask(ctx, s.peerClient, m.PeerURLs[0]+path, s.clusterID, q)
	if err != nil {
		return ans, fmt.Errorf("%w: forwarding to the leader: %v", ErrNoLeader, err)
	}
	return ans, answerError(ans.Error)
}

// answerError is the error whose text the leader answered.
func answerError(text string) error {
	switch text {
	case "":
		return nil
	case lease.ErrLeaseNotFound.Error():
		return lease.ErrLeaseNotFound
	case lease.ErrNotPrimary.Error():
		return ErrNotLeader
	case ErrNotLearnerReady.Error():
		return ErrNotLearnerReady
	case ErrMemberNotLearner.Error():
		return ErrMemberNotLearner
	case ErrMemberNotFound.Error():
		return ErrMemberNotFound
	}
	return errors.New(text)
}

func (s *Server) serveLeaseRenew(w http.ResponseWriter, r *http.Request) {
	peerquery.Serve(w, r, s.clusterID, func(q peerquery.Query) (peerquery.Answer, error) {
		ttl, err := onPrimary(r.Context(), s, func() (int64, error) { return s.renewAsLeader(r.Context(), q.ID) })
		return peerquery.Answer{TTL: ttl}, err
	})
}

func (s *Server) serveLeaseTTL(w http.ResponseWriter, r *http.Request) {
	peerquery.Serve(w, r, s.clusterID, func(q peerquery.Query) (peerquery.Answer, error) {
		info, err := onPrimary(r.Context(), s, func() (lease.TTLInfo, error) { return s.lessor.TimeToLive(q.ID, q.Keys) })
		return peerquery.Answer{Info: info}, err
	})
}

func (s *Server) servePromote(w http.ResponseWriter, r *http.Request) {
	peerquery.Serve(w, r, s.clusterID, func(q peerquery.Query) (peerquery.Answer, error) {
		if s.leaderID.Load() != s.id {
			return peerquery.Answer{}, ErrNotLeader
		}
		_, err := s.MemberPromote(r.Context(), uint64(q.ID))
		return peerquery.Answer{}, err
	})
}
