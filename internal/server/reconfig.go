package server

import (
	"time"

	"github.com/cairnkv/cairn/pkg/cluster"
)

// The strict reconfiguration check (etcd's --strict-reconfig-check, on by
// default; its rules are pkg/cluster's CheckAdd, CheckRemove and
// CheckPromote) on the voters as this member sees them.

func (s *Server) voters() []Member {
	var vs []Member
	for _, m := range s.members.list() {
		if !m.IsLearner {
			vs = append(vs, m)
		}
	}
	return vs
}

// voterStates are the voters, started or not, and active or connected to
// this member (since cluster.HealthInterval ago at least) or not.
func (s *Server) voterStates() []cluster.Voter {
	since := time.Now().Add(-cluster.HealthInterval)
	var out []cluster.Voter
	for _, m := range s.voters() {
		v := cluster.Voter{ID: m.ID, Started: m.Name != "", Active: true, Connected: true}
		if m.ID != s.id {
			t := s.transport.ActiveSince(m.ID)
			v.Active, v.Connected = !t.IsZero(), !t.IsZero() && t.Before(since)
		}
		out = append(out, v)
	}
	return out
}

func (s *Server) checkAdd(isLearner bool) error {
	if s.cfg.NoStrictReconfigCheck {
		return nil
	}
	return cluster.CheckAdd(s.voterStates(), isLearner)
}

// checkRemove: a learner may always be removed.
func (s *Server) checkRemove(id uint64) error {
	if m, _ := s.members.get(id); m.IsLearner {
		return nil
	}
	return cluster.CheckRemove(s.voterStates(), id, !s.cfg.NoStrictReconfigCheck)
}

func (s *Server) checkPromote() error {
	if s.cfg.NoStrictReconfigCheck {
		return nil
	}
	return cluster.CheckPromote(s.voterStates())
}
