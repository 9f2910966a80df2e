package cluster

import (
	"errors"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// voters are n voters 1..n, all started, active and connected but for the
// IDs in down (started, neither active nor connected).
func voters(n int, down ...uint64) []Voter {
	var vs []Voter
	for id := uint64(1); id <= uint64(n); id++ {
		v := Voter{ID: id, Started: true, Active: true, Connected: true}
		for _, d := range down {
			if d == id {
				v = Voter{ID: id, Started: true}
			}
		}
		vs = append(vs, v)
	}
	return vs
}

// TestStrictReconfigRules: etcd's answers with members down.
func TestStrictReconfigRules(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"add to a one-member cluster", CheckAdd(voters(1), false), nil},
		{"add with one of three down", CheckAdd(voters(3, 3), false), ErrUnhealthy},
		{"add a learner with one of three down", CheckAdd(voters(3, 3), true), ErrUnhealthy},
		{"add with one of four down", CheckAdd(voters(4, 4), false), nil},
		{"add with two of three not started", CheckAdd([]Voter{{ID: 1, Started: true, Active: true, Connected: true}, {ID: 2}, {ID: 3}}, false), ErrNotEnoughStarted},
		{"remove the last voter, not strict", CheckRemove(voters(1), 1, false), ErrNotEnoughStarted},
		{"remove a member down", CheckRemove(voters(3, 3), 3, true), nil},
		{"remove a member up with another down", CheckRemove(voters(3, 3), 2, true), ErrUnhealthy},
		{"remove one of three up", CheckRemove(voters(3), 2, true), nil},
		{"remove anything, not strict", CheckRemove(voters(3, 2, 3), 1, false), nil},
		{"promote with one of three down", CheckPromote(voters(3, 3)), nil},
		{"promote with two of three not started", CheckPromote([]Voter{{ID: 1, Started: true}, {ID: 2}, {ID: 3}}), ErrNotEnoughStarted},
	} {
		if !errors.Is(c.err, c.want) || (c.want == nil && c.err != nil) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	typ, node := raftpb.ConfChangeType_ConfChangeRemoveNode, uint64(1)
	remove := &raftpb.ConfChange{Type: &typ, NodeId: &node}
	if !RemovesLastVoter(&raftpb.ConfState{Voters: []uint64{1}}, remove) || RemovesLastVoter(&raftpb.ConfState{Voters: []uint64{1, 2}}, remove) {
		t.Error("RemovesLastVoter: wrong about removing 1 of [1] or of [1 2]")
	}
}
