package server

import (
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// The strict reconfiguration check (etcd's --strict-reconfig-check, on by
// default) refuses a membership change that would leave the cluster
// without a quorum of started, connected voters: a member is started once
// it has published its name, and connected when this member has had a
// message stream from it for healthInterval.

// healthInterval is how long a peer must have been connected to count, as
// etcd's.
const healthInterval = 5 * time.Second

func (s *Server) voters() []Member {
	var vs []Member
	for _, m := range s.members.list() {
		if !m.IsLearner {
			vs = append(vs, m)
		}
	}
	return vs
}

// connectedVoters counts this member and the voters connected to it since
// healthInterval ago at least.
func (s *Server) connectedVoters(vs []Member) int {
	since := time.Now().Add(-healthInterval)
	n := 0
	for _, m := range vs {
		if m.ID == s.id {
			n++
			continue
		}
		if t := s.transport.ActiveSince(m.ID); !t.IsZero() && t.Before(since) {
			n++
		}
	}
	return n
}

// startedVoters counts the voters of vs that have started (published
// their name), but for the one with ID except (0: none).
func startedVoters(vs []Member, except uint64) int {
	n := 0
	for _, v := range vs {
		if v.ID != except && v.Name != "" {
			n++
		}
	}
	return n
}

// quorum is the majority of n voters.
func quorum(n int) int { return n/2 + 1 }

// checkAdd: a new voter must not leave the started voters short of a
// quorum of the larger cluster (a one-member cluster may always grow to
// two: that is how a cluster is restored), and this member must be
// connected to a quorum of the cluster with the new member counted, learner
// or not, or the change may break the active quorum: with one of three
// members down an addition is refused, with one of four it is not (as in
// etcd's TestCtlV3MemberAddAsLearnerWithOneMemberDown). So a cluster also
// refuses additions for healthInterval after it starts, as etcd's does.
func (s *Server) checkAdd(isLearner bool) error {
	if s.cfg.NoStrictReconfigCheck {
		return nil
	}
	vs := s.voters()
	if !isLearner {
		n, up := len(vs)+1, startedVoters(vs, 0)
		if !(up == 1 && n == 2) && up < quorum(n) {
			return ErrNotEnoughStarted
		}
	}
	if len(vs) > 1 && s.connectedVoters(vs) < quorum(len(vs)+1) {
		return ErrUnhealthy
	}
	return nil
}

// checkRemove: the voters that stay must hold a quorum of started members,
// and, unless the member removed is down already, enough of them must be
// connected. The last voter is never removed: raft cannot run without one,
// and the data dir could not start again.
func (s *Server) checkRemove(id uint64) error {
	m, _ := s.members.get(id)
	if m.IsLearner {
		return nil
	}
	vs := s.voters()
	if len(vs) <= 1 {
		return ErrNotEnoughStarted
	}
	if s.cfg.NoStrictReconfigCheck {
		return nil
	}
	if startedVoters(vs, id) < quorum(len(vs)-1) {
		return ErrNotEnoughStarted
	}
	if id != s.id && s.transport.ActiveSince(id).IsZero() {
		return nil // not part of the active quorum
	}
	if s.connectedVoters(vs)-1 < quorum(len(vs)-1) {
		return ErrUnhealthy
	}
	return nil
}

// checkPromote: the voters and the learner promoted, started, must hold a
// quorum of the larger cluster.
func (s *Server) checkPromote() error {
	if s.cfg.NoStrictReconfigCheck {
		return nil
	}
	vs := s.voters()
	if startedVoters(vs, 0)+1 < quorum(len(vs)+1) { // the learner counts as started
		return ErrNotEnoughStarted
	}
	return nil
}

// removesLastVoter reports whether cc would leave raft with no voter, which
// raft refuses with a panic. Such a change is refused at apply too, for logs
// written before the check existed (it depends on the raft configuration
// alone, so every member decides the same).
func removesLastVoter(cs *raftpb.ConfState, cc *raftpb.ConfChange) bool {
	if cc.GetType() != raftpb.ConfChangeType_ConfChangeRemoveNode {
		return false
	}
	voters := cs.GetVoters()
	return len(voters) == 1 && voters[0] == cc.GetNodeId() && len(cs.GetVotersOutgoing()) == 0
}
