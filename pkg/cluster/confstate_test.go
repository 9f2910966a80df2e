package cluster

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// TestConfStateAsEtcdStoresIt: the meta bucket's confState is etcd's JSON.
func TestConfStateAsEtcdStoresIt(t *testing.T) {
	cs := MarshalConfState(&raftpb.ConfState{Voters: []uint64{2255496909790476482}})
	if string(cs) != `{"voters":[2255496909790476482],"auto_leave":false}` {
		t.Errorf("confState %s", cs)
	}
	if back, err := UnmarshalConfState(cs); err != nil || back.GetVoters()[0] != 2255496909790476482 {
		t.Errorf("UnmarshalConfState: %v %v", back, err)
	}
}
