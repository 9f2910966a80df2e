package server

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

func TestConfHistory(t *testing.T) {
	voters := func(ids ...uint64) *raftpb.ConfState { return &raftpb.ConfState{Voters: ids} }
	var h confHistory
	h.reset(10, voters(1))
	for i := uint64(11); i <= 30; i++ {
		h.see(i)
		switch i {
		case 15:
			h.record(15, voters(1, 2))
		case 25:
			h.record(25, voters(1, 2, 3))
		}
	}
	h.record(20, voters(9)) // replayed below the last one: ignored

	want := map[uint64][]uint64{10: {1}, 14: {1}, 15: {1, 2}, 24: {1, 2}, 25: {1, 2, 3}, 30: {1, 2, 3}}
	for index, ids := range want {
		cs, ok := h.at(index)
		if !ok || len(cs.Voters) != len(ids) {
			t.Errorf("at(%d) = %v, %v; want voters %v", index, cs, ok, ids)
		}
	}
	if _, ok := h.at(9); ok {
		t.Error("at(9): the history starts at 10")
	}
	if _, ok := h.at(31); ok {
		t.Error("at(31): no entry past 30 has been applied; a conf change there would be missing")
	}

	h.forget(24)
	if _, ok := h.at(14); ok {
		t.Error("at(14) after forget(24): dropped")
	}
	if cs, ok := h.at(24); !ok || len(cs.Voters) != 2 {
		t.Errorf("at(24) after forget(24) = %v, %v; want the change at 15 kept", cs, ok)
	}
}
