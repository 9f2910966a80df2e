package store

import (
	"encoding/binary"
	"fmt"
)

// Buckets of the bbolt file, with etcd's names.
var (
	BucketKey            = []byte("key")
	BucketMeta           = []byte("meta")
	BucketLease          = []byte("lease")
	BucketAlarm          = []byte("alarm")
	BucketCluster        = []byte("cluster")
	BucketMembers        = []byte("members")
	BucketMembersRemoved = []byte("members_removed")
	BucketAuth           = []byte("auth")
	BucketAuthUsers      = []byte("authUsers")
	BucketAuthRoles      = []byte("authRoles")
)

// Keys of the meta bucket.
var (
	MetaConsistentIndex     = []byte("consistent_index")
	MetaTerm                = []byte("term")
	MetaScheduledCompactRev = []byte("scheduledCompactRev")
	MetaFinishedCompactRev  = []byte("finishedCompactRev")
	MetaConfState           = []byte("confState")
	MetaStorageVersion      = []byte("storageVersion")
)

// HashIgnores are the keys Maintenance.Hash leaves out: they differ between
// members that hold the same data.
var HashIgnores = map[string][]string{
	string(BucketMeta): {string(MetaConsistentIndex), string(MetaTerm)},
}

func encodeUint64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func decodeUint64(name string, b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("meta %s: want 8 bytes, got %d", name, len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}
