package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/autopromote"
	"github.com/cairnkv/cairn/internal/peerquery"
	"github.com/cairnkv/cairn/internal/raftnode"
	"github.com/cairnkv/cairn/pkg/cluster"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// MemberAdd adds a member (a learner if isLearner) with the given peer URLs
// and returns it and the new member list.
//
// Membership changes check the member list as of now: each first waits
// until this member has applied what was committed before the request
// (LinearizableReadNotify), or a change acknowledged by another member a
// moment ago could be missing here ("member not found").
func (s *Server) MemberAdd(ctx context.Context, peerURLs []string, isLearner bool) (Member, []Member, error) {
	if err := s.LinearizableReadNotify(ctx); err != nil {
		return Member{}, nil, err
	}
	learners := 0
	for _, m := range s.members.list() {
		for _, u := range m.PeerURLs {
			for _, nu := range peerURLs {
				if u == nu {
					return Member{}, nil, ErrPeerURLExists
				}
			}
		}
		if m.IsLearner {
			learners++
		}
	}
	if isLearner && learners >= s.cfg.LearnerLimit() {
		return Member{}, nil, ErrTooManyLearners
	}
	if err := s.checkAdd(isLearner); err != nil {
		s.log.Warn("rejecting member add request; local member has not been connected to majority peers, reconfigure breaks active quorum", "peer-urls", peerURLs, "learner", isLearner, "err", err)
		return Member{}, nil, err
	}
	m := Member{ID: cluster.MemberID(peerURLs, s.cfg.InitialClusterToken, time.Now().Unix()), PeerURLs: peerURLs, IsLearner: isLearner}
	// The ID is a hash of the peer URLs and the second: a member removed
	// in this second with the same URLs had it, and an ID never comes back.
	if s.members.isRemoved(m.ID) {
		return Member{}, nil, ErrMemberIDRemoved
	}
	typ := raftpb.ConfChangeType_ConfChangeAddNode
	if isLearner {
		typ = raftpb.ConfChangeType_ConfChangeAddLearnerNode
	}
	if err := s.proposeConfChange(ctx, typ, m); err != nil {
		return Member{}, nil, err
	}
	return m, s.members.list(), nil
}

// MemberRemove removes a member.
func (s *Server) MemberRemove(ctx context.Context, id uint64) ([]Member, error) {
	if err := s.LinearizableReadNotify(ctx); err != nil {
		return nil, err
	}
	m, ok := s.members.get(id)
	if !ok {
		if s.members.isRemoved(id) {
			return nil, ErrMemberIDRemoved
		}
		return nil, ErrMemberNotFound
	}
	if err := s.checkRemove(id); err != nil {
		s.log.Warn("rejecting member remove request", "member-id", fmt.Sprintf("%x", id), "err", err)
		return nil, err
	}
	if err := s.proposeConfChange(ctx, raftpb.ConfChangeType_ConfChangeRemoveNode, m); err != nil {
		return nil, err
	}
	return s.members.list(), nil
}

// MemberUpdate changes a member's peer URLs.
func (s *Server) MemberUpdate(ctx context.Context, id uint64, peerURLs []string) ([]Member, error) {
	if err := s.LinearizableReadNotify(ctx); err != nil {
		return nil, err
	}
	m, ok := s.members.get(id)
	if !ok {
		return nil, ErrMemberNotFound
	}
	m.PeerURLs = peerURLs
	if err := s.proposeConfChange(ctx, raftpb.ConfChangeType_ConfChangeUpdateNode, m); err != nil {
		return nil, err
	}
	return s.members.list(), nil
}

// MemberPromote makes a learner a voting member once its log has caught
// up with the leader's: within a tenth of --snapshot-count entries
// (autopromote.CaughtUp, which AutoPromoteLearners applies too).
func (s *Server) MemberPromote(ctx context.Context, id uint64) ([]Member, error) {
	if s.leaderID.Load() != s.id {
		// Only the leader knows how far the learner is: ask it.
		if _, err := s.askLeader(ctx, peerquery.PathPromote, peerquery.Query{ID: int64(id)}); err != nil {
			return nil, err
		}
		return s.members.list(), nil
	}
	if err := s.LinearizableReadNotify(ctx); err != nil {
		return nil, err
	}
	m, ok := s.members.get(id)
	if !ok {
		return nil, ErrMemberNotFound
	}
	if !m.IsLearner {
		return nil, ErrMemberNotLearner
	}
	st := s.node.Status()
	learner, ok := st.Progress[id]
	leader := st.Progress[s.id]
	if !ok || !autopromote.CaughtUp(learner.Match, leader.Match, s.cfg.SnapshotCount/10) {
		return nil, ErrNotLearnerReady
	}
	if err := s.checkPromote(); err != nil {
		return nil, err
	}
	if err := s.proposeConfChange(ctx, raftpb.ConfChangeType_ConfChangeAddNode, m); err != nil {
		return nil, err
	}
	s.counts.learnerPromotes.Add(1)
	return s.members.list(), nil
}

func (s *Server) proposeConfChange(ctx context.Context, typ raftpb.ConfChangeType, m Member) error {
	mctx, err := encodeMemberContext(m)
	if err != nil {
		return err
	}
	if err := s.waitLeader(ctx, s.deadlines.After(s.RequestTimeout())); err != nil {
		return err
	}
	start := time.Now()
	id := s.reqIDs.Next()
	cc := &raftpb.ConfChange{Id: proto.Uint64(id), Type: typ.Enum(), NodeId: proto.Uint64(m.ID), Context: mctx}
	ctx, cancel := context.WithTimeout(ctx, s.RequestTimeout())
	defer cancel()
	// raft takes one conf change at a time: its leader empties a conf
	// change proposed before raft's applied index has reached the last one,
	// and the proposer would wait for the request timeout. The apply loop
	// answers a conf change before raft is told it was applied (at the
	// Advance of its Ready, after the WAL write), so a client's next change
	// could come first. It is proposed once this member's raft has caught
	// up with what the member applied, which holds every conf change
	// committed before the request (the callers' LinearizableReadNotify).
	// On a follower the leader's raft has too: the leader answers a read
	// index in a later Ready than the one that told the follower of the
	// commit, so after that Ready's Advance.
	for applied := s.AppliedIndex(); ; {
		index, moved := s.node.Applied()
		if index >= applied {
			break
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return s.waitError(ctx, start)
		case <-s.stopc:
			return ErrStopped
		}
	}
	ch := s.waiters.Register(id, proposal{})
	if err := s.node.ProposeConfChange(cc); err != nil {
		s.waiters.Cancel(id)
		return s.proposeError(err)
	}
	select {
	case res := <-ch:
		return res.err
	case <-ctx.Done():
		s.waiters.Cancel(id)
		return s.waitError(ctx, start)
	case <-s.stopc:
		return ErrStopped
	}
}

// pathMembers serves the member list to members that join.
const pathMembers = "/members"

// clusterInfo is what the peer endpoint /members tells a joining member.
type clusterInfo struct {
	ClusterID string   `json:"clusterID"`
	Members   []Member `json:"members"`
}

func (s *Server) serveMembers(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(clusterInfo{ClusterID: strconv.FormatUint(s.clusterID, 16), Members: s.members.list()})
}

// join starts a member added to a running cluster (--initial-cluster-state
// existing): it learns the cluster from a peer and waits for the leader to
// send it the log or a snapshot.
func (s *Server) join() error {
	initial, err := cluster.ParseInitial(s.cfg.InitialCluster)
	if err != nil {
		return err
	}
	var info *clusterInfo
	var lastErr error
	for name, urls := range initial {
		if name == s.cfg.Name {
			continue
		}
		for _, u := range urls {
			if info, lastErr = s.fetchClusterInfo(u); lastErr == nil {
				break
			}
		}
		if info != nil {
			break
		}
	}
	if info == nil {
		return fmt.Errorf("join: no member of --initial-cluster answered: %v", lastErr)
	}
	if s.clusterID, err = strconv.ParseUint(info.ClusterID, 16, 64); err != nil {
		return fmt.Errorf("join: bad cluster ID %q", info.ClusterID)
	}
	for _, m := range info.Members {
		if cluster.SameURLs(m.PeerURLs, s.cfg.InitialAdvertisePeerURLs) {
			s.id = m.ID
		}
		cp := m
		s.members.members[m.ID] = &cp
	}
	if s.id == 0 {
		return fmt.Errorf("join: the cluster has no member with peer URLs %v; add it first with `member add`", s.cfg.InitialAdvertisePeerURLs)
	}
	w, err := walfmt.Create(s.cfg.WALPath(), newMetadata(s.id, s.clusterID), s.walOptions())
	if err != nil {
		return err
	}
	s.wal = w
	s.confState = &raftpb.ConfState{}
	s.confs.Reset(0, s.confState)
	s.node, err = raftnode.Restart(s.raftConfig())
	return err
}

func (s *Server) fetchClusterInfo(peerURL string) (*clusterInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, peerURL+pathMembers, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.peerClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s%s: %s", peerURL, pathMembers, resp.Status)
	}
	info := new(clusterInfo)
	if err := json.NewDecoder(resp.Body).Decode(info); err != nil {
		return nil, fmt.Errorf("%s%s: %w", peerURL, pathMembers, err)
	}
	return info, nil
}

// MoveLeader hands leadership to another voting member and waits until it
// has it.
func (s *Server) MoveLeader(ctx context.Context, target uint64) error {
	if s.leaderID.Load() != s.id {
		return ErrNotLeader
	}
	m, ok := s.members.get(target)
	if !ok || m.IsLearner {
		return ErrBadLeaderTransferee
	}
	ctx, cancel := context.WithTimeout(ctx, s.RequestTimeout())
	defer cancel()
	changed := s.leaderless.Changed()
	s.node.TransferLeadership(target)
	for s.leaderID.Load() != target {
		select {
		case <-ctx.Done():
			return ErrTimeout
		case <-s.stopc:
			return ErrStopped
		case <-changed:
			changed = s.leaderless.Changed()
		}
	}
	return nil
}

// HandOffLeadership, on the leader of a cluster with other voters, moves
// leadership to the most caught-up one that is active, as etcd does before
// it stops: the cluster then goes on without waiting out an election
// timeout for the stopped leader (and its term rises by one, not two).
// It returns when done or after two election timeouts.
func (s *Server) HandOffLeadership() {
	if s.leaderID.Load() != s.id {
		return
	}
	st := s.node.Status()
	var target uint64
	var best uint64
	for id, pr := range st.Progress {
		if id == s.id || pr.IsLearner || !pr.RecentActive {
			continue
		}
		if target == 0 || pr.Match > best {
			target, best = id, pr.Match
		}
	}
	if target == 0 {
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*s.cfg.ElectionTimeout)
	defer cancel()
	if err := s.MoveLeader(ctx, target); err != nil {
		s.log.Warn("leadership transfer before stopping failed", "to", fmt.Sprintf("%x", target), "err", err)
		return
	}
	s.log.Info("transferred leadership before stopping", "from", fmt.Sprintf("%x", s.id), "to", fmt.Sprintf("%x", target), "took", time.Since(start).String())
	s.drainProposals()
}

// drainProposals keeps a member that has just handed leadership over
// forwarding the proposals its followers sent it before they learnt of the
// new leader, which would otherwise be lost with it and wait for their
// timeout: for a heartbeat interval (by then each follower has heard from
// the new leader), then until none is held or queued, at most an election
// timeout in all.
func (s *Server) drainProposals() {
	deadline := time.Now().Add(s.cfg.ElectionTimeout)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	quietFrom := time.Now().Add(s.cfg.HeartbeatInterval)
	for now := time.Now(); now.Before(deadline); now = time.Now() {
		if now.After(quietFrom) && s.heldProposals.Load() == 0 && s.transport.Queued() == 0 {
			return
		}
		select {
		case <-t.C:
		case <-s.stopc:
			return
		}
	}
}
