package cluster

import (
	"encoding/json"
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// UnmarshalConfState decodes the meta bucket's confState: the JSON of a
// raftpb.ConfState.
func UnmarshalConfState(b []byte) (*raftpb.ConfState, error) {
	cs := new(raftpb.ConfState)
	if err := json.Unmarshal(b, cs); err != nil {
		return nil, fmt.Errorf("decode confState: %w", err)
	}
	return cs, nil
}

// MarshalConfState encodes cs as etcd stores it in the meta bucket.
func MarshalConfState(cs *raftpb.ConfState) []byte {
	c := &raftpb.ConfState{
		Voters:         cs.GetVoters(),
		Learners:       cs.GetLearners(),
		VotersOutgoing: cs.GetVotersOutgoing(),
		LearnersNext:   cs.GetLearnersNext(),
		AutoLeave:      proto.Bool(cs.GetAutoLeave()),
	}
	b, _ := json.Marshal(c) // cannot fail: numbers and a bool
	return b
}
