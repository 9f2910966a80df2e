package server

import (
	"fmt"
	"time"

	"go.etcd.io/raft/v3"

	"github.com/cairnkv/cairn/internal/leaderwatch"
)

// leaderGone is told (transport.OnPeerGone) that a peer's process is gone:
// its stream to this member broke and its peer port refuses connections.
// When the peer is this member's leader, the voters need not wait out the
// election timeout to notice: they campaign at once, as a leader's
// transferee does. raft's safety does not depend on when an election
// starts; only its cost does, and a leader whose port refuses connections
// serves no one. A partition or a paused leader resets nothing and still
// waits for the timeout.
//
// So that two voters do not split the votes, they take turns
// (leaderwatch.CampaignTurn), two heartbeats apart (time for a round of
// votes and the first append); each campaigns only if no leader has been
// elected by its turn. A voter whose log is behind loses its election to
// the next one's.
func (s *Server) leaderGone(id uint64) {
	st := s.node.Status()
	// Before the check of the leader: another voter's campaign may have
	// reached this member first, and what it forwarded to id is lost too.
	// While it still follows id, so is what it forwards from now on.
	var followedAt uint64
	if st.Lead == id {
		followedAt = st.GetTerm()
	}
	s.forwarded.LeaderGone(id, followedAt)
	if st.Lead != id || st.RaftState != raft.StateFollower || s.stopping() {
		return
	}
	var voters []uint64
	for _, m := range s.voters() {
		voters = append(voters, m.ID)
	}
	turn := leaderwatch.CampaignTurn(voters, id, s.id)
	if turn < 0 {
		return // a learner does not campaign
	}
	wait := time.Duration(turn) * 2 * s.cfg.HeartbeatInterval
	s.log.Warn("the leader's process is gone (its stream broke and its peer port refuses connections); campaigning without waiting for the election timeout",
		"leader", fmt.Sprintf("%x", id), "term", st.GetTerm(), "after", wait.String())
	select {
	case <-time.After(wait):
	case <-s.stopc:
		return
	}
	s.node.CampaignAsTransferee(id)
}
