package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Decoders of the values of every bucket of an etcd 3.7 data file, for the
// offline tools and for the packages that own those buckets (the members
// and the downgrade records are pkg/cluster's).

// Keys of the auth and cluster buckets.
var (
	AuthEnabledKey    = []byte("authEnabled")
	AuthRevisionKey   = []byte("authRevision")
	ClusterVersionKey = []byte("clusterVersion")
	ClusterDowngrade  = []byte("downgrade")
)

// DecodeUint64 decodes an 8-byte big-endian value (meta consistent_index and
// term, auth authRevision).
func DecodeUint64(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("want 8 bytes, got %d", len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// EncodeUint64 encodes v as 8 bytes big-endian.
func EncodeUint64(v uint64) []byte { return encodeUint64(v) }

// ParseLeaseKey decodes a key of the lease bucket: the 8-byte big-endian ID.
func ParseLeaseKey(k []byte) (int64, error) {
	v, err := DecodeUint64(k)
	if err != nil {
		return 0, fmt.Errorf("lease key %x: %w", k, err)
	}
	return int64(v), nil
}

// UnmarshalAuthUser decodes a value of the authUsers bucket.
func UnmarshalAuthUser(b []byte) (*authpb.User, error) {
	u := new(authpb.User)
	if err := proto.Unmarshal(b, u); err != nil {
		return nil, fmt.Errorf("decode auth user: %w", err)
	}
	return u, nil
}

// UnmarshalAuthRole decodes a value of the authRoles bucket.
func UnmarshalAuthRole(b []byte) (*authpb.Role, error) {
	r := new(authpb.Role)
	if err := proto.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("decode auth role: %w", err)
	}
	return r, nil
}

// UnmarshalAlarmKey decodes a key of the alarm bucket: a marshalled
// AlarmMember (the value is empty).
func UnmarshalAlarmKey(k []byte) (*pb.AlarmMember, error) {
	a := new(pb.AlarmMember)
	if err := proto.Unmarshal(k, a); err != nil {
		return nil, fmt.Errorf("decode alarm: %w", err)
	}
	return a, nil
}

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
