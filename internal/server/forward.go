package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/cairnkv/cairn/internal/lease"
	"github.com/cairnkv/cairn/internal/transport"
)

// Only the leader's lessor tracks expiry, so keep-alives and time-to-live
// queries that reach a follower are forwarded to the leader over the peer
// port; so is the promotion of a learner, which only the leader can judge.
const (
	pathLeaseRenew = "/lease/renew"
	pathLeaseTTL   = "/lease/ttl"
	pathPromote    = "/members/promote"
)

type peerQuery struct {
	ID   int64 `json:"id"`
	Keys bool  `json:"keys,omitempty"`
}

type peerAnswer struct {
	TTL   int64         `json:"ttl"`
	Info  lease.TTLInfo `json:"info"`
	Error string        `json:"error,omitempty"`
}

// LeaseRenew renews a lease on the leader and returns its TTL.
func (s *Server) LeaseRenew(ctx context.Context, id int64) (int64, error) {
	ttl, err := onPrimary(ctx, s, func() (int64, error) { return s.renewAsLeader(ctx, id) })
	if !errors.Is(err, lease.ErrNotPrimary) {
		return ttl, err
	}
	var ans peerAnswer
	if err := s.askLeader(ctx, pathLeaseRenew, peerQuery{ID: id}, &ans); err != nil {
		return 0, err
	}
	return ans.TTL, nil
}

// LeaseTimeToLive reports a lease's TTLs (and keys), from the leader.
func (s *Server) LeaseTimeToLive(ctx context.Context, id int64, keys bool) (lease.TTLInfo, error) {
	info, err := onPrimary(ctx, s, func() (lease.TTLInfo, error) { return s.lessor.TimeToLive(id, keys) })
	if !errors.Is(err, lease.ErrNotPrimary) {
		return info, err
	}
	var ans peerAnswer
	if err := s.askLeader(ctx, pathLeaseTTL, peerQuery{ID: id, Keys: keys}, &ans); err != nil {
		return lease.TTLInfo{}, err
	}
	return ans.Info, nil
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

func (s *Server) askLeader(ctx context.Context, path string, q peerQuery, ans *peerAnswer) error {
	lead := s.leaderID.Load()
	if lead == 0 {
		return ErrNoLeader
	}
	m, ok := s.members.get(lead)
	if !ok || len(m.PeerURLs) == 0 {
		return ErrNoLeader
	}
	body, _ := json.Marshal(q)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.PeerURLs[0]+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set(transport.HeaderClusterID, strconv.FormatUint(s.clusterID, 16))
	resp, err := s.peerClient.Do(req)
	if err != nil {
		return fmt.Errorf("%w: forwarding to the leader: %v", ErrNoLeader, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(ans); err != nil {
		return fmt.Errorf("forwarding to the leader: %w", err)
	}
	switch ans.Error {
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
	return errors.New(ans.Error)
}

func (s *Server) serveLeaseRenew(w http.ResponseWriter, r *http.Request) {
	s.servePeerQuery(w, r, func(q peerQuery) (peerAnswer, error) {
		ttl, err := onPrimary(r.Context(), s, func() (int64, error) { return s.renewAsLeader(r.Context(), q.ID) })
		return peerAnswer{TTL: ttl}, err
	})
}

func (s *Server) serveLeaseTTL(w http.ResponseWriter, r *http.Request) {
	s.servePeerQuery(w, r, func(q peerQuery) (peerAnswer, error) {
		info, err := onPrimary(r.Context(), s, func() (lease.TTLInfo, error) { return s.lessor.TimeToLive(q.ID, q.Keys) })
		return peerAnswer{Info: info}, err
	})
}

func (s *Server) servePromote(w http.ResponseWriter, r *http.Request) {
	s.servePeerQuery(w, r, func(q peerQuery) (peerAnswer, error) {
		if s.leaderID.Load() != s.id {
			return peerAnswer{}, ErrNotLeader
		}
		_, err := s.MemberPromote(r.Context(), uint64(q.ID))
		return peerAnswer{}, err
	})
}

func (s *Server) servePeerQuery(w http.ResponseWriter, r *http.Request, fn func(peerQuery) (peerAnswer, error)) {
	if r.Header.Get(transport.HeaderClusterID) != strconv.FormatUint(s.clusterID, 16) {
		http.Error(w, "cluster ID mismatch", http.StatusPreconditionFailed)
		return
	}
	var q peerQuery
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&q); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ans, err := fn(q)
	if err != nil {
		ans.Error = err.Error()
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(ans)
}
