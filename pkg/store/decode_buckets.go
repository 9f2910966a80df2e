package store

import (
	"encoding/binary"
	"fmt"
)

// Keys and values of the buckets that other packages own (members, downgrade
// and confState are pkg/cluster's, users and roles internal/auth's; the
// offline tools decode the rest themselves), as etcd 3.7 writes them.

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
