package forensics

import (
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/store"
)

// Decoders of buckets that only the offline tools read whole.

// parseLeaseKey decodes a key of the lease bucket: the 8-byte big-endian ID.
func parseLeaseKey(k []byte) (int64, error) {
	v, err := store.DecodeUint64(k)
	if err != nil {
		return 0, fmt.Errorf("lease key %x: %w", k, err)
	}
	return int64(v), nil
}

// unmarshalAlarmKey decodes a key of the alarm bucket: a marshalled
// AlarmMember (the value is empty).
func unmarshalAlarmKey(k []byte) (*pb.AlarmMember, error) {
	a := new(pb.AlarmMember)
	if err := proto.Unmarshal(k, a); err != nil {
		return nil, fmt.Errorf("decode alarm: %w", err)
	}
	return a, nil
}
