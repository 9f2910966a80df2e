package confhistory

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

func TestConfHistory(t *testing.T) {
	voters := func(ids ...uint64) *raftpb.ConfState { return &raftpb.ConfState{Voters: ids} }
	var h History
	h.Reset(10, voters(1))
	for i := uint64(11); i <= 30; i++ {
		h.See(i)
		switch i {
		case 15:
			h.Record(15, voters(1, 2))
		case 25:
			h.Record(25, voters(1, 2, 3))
		}
	}
	h.Record(20, voters(9)) // replayed below the last one: ignored

	want := map[uint64][]uint64{10: {1}, 14: {1}, 15: {1, 2}, 24: {1, 2}, 25: {1, 2, 3}, 30: {1, 2, 3}}
	for index, ids := range want {
		cs, ok := h.At(index)
		if !ok || len(cs.Voters) != len(ids) {
			t.Errorf("at(%d) = %v, %v; want voters %v", index, cs, ok, ids)
		}
	}
	if _, ok := h.At(9); ok {
		t.Error("at(9): the history starts at 10")
	}
	if _, ok := h.At(31); ok {
		t.Error("at(31): no entry past 30 has been applied; a conf change there would be missing")
	}

	h.Forget(24)
	if _, ok := h.At(14); ok {
		t.Error("at(14) after forget(24): dropped")
	}
	if cs, ok := h.At(24); !ok || len(cs.Voters) != 2 {
		t.Errorf("at(24) after forget(24) = %v, %v; want the change at 15 kept", cs, ok)
	}
}
