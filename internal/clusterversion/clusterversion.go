// Package clusterversion is the cluster version and downgrades as etcd 3.7
// runs them: the versions recorded in the store's cluster and meta
// buckets, the version the leader keeps the cluster at, a downgrade's
// rules, and the apply of the requests that change them. The server
// drives it through the Member interface and runs the leader's loop that
// proposes the cluster version. It may import pkg/store and
// internal/version, never internal/server or internal/api.
package clusterversion

import (
	"context"
	"log/slog"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/version"
	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/store"
)

// Member is what a downgrade needs of the member it runs on.
type Member interface {
	// Store is the member's current store.
	Store() *store.Store
	// LinearizableReadNotify returns once the member has applied what the
	// leader had committed at the call.
	LinearizableReadNotify(ctx context.Context) error
	// Propose replicates a request and returns its result once applied.
	Propose(ctx context.Context, req *pb.InternalRaftRequest) (proto.Message, error)
}

// ClusterVersion is the version of the cluster in the cluster bucket, as
// etcd's leader records it ("3.7.0"); empty until set.
func ClusterVersion(st *store.Store) string {
	return readBucketKey(st, store.BucketCluster, store.ClusterVersionKey)
}

// StorageVersion is the version of the db's layout in the meta bucket
// ("3.7.0"); it follows the cluster version, as etcd's does.
func StorageVersion(st *store.Store) string {
	return readBucketKey(st, store.BucketMeta, store.MetaStorageVersion)
}

func readBucketKey(st *store.Store, bucket, key []byte) string {
	rt := st.Backend().Read()
	defer rt.Close()
	v, _ := rt.Get(bucket, key)
	return string(v)
}

// Wanted is the version the leader keeps the cluster at: the downgrade
// target while a downgrade is enabled, else cairn's own (every member runs
// the same version).
func Wanted(st *store.Store, log *slog.Logger) string {
	if d := DowngradeInfo(st, log); d.Enabled {
		return d.TargetVersion
	}
	return version.StorageVersion
}

// oldestStorageVersion is the oldest layout the db may be declared as:
// etcd 3.6 reads cairn's (etcd 3.7's) layout as its own, older ones
// differ.
var oldestStorageVersion = version.Minor{Major: 3, Minor: 6}

// ApplyClusterVersion records a new cluster version, and the storage
// version with it, as etcd does once the cluster version changes, so that
// a member of the older version can start on the db after a downgrade. It
// reports whether the version was lowered: the member then forces a raft
// snapshot, as etcd does, so that the v2 store of the newest snapshot has
// the lowered version too.
func ApplyClusterVersion(wt *backend.WriteTx, ver string, log *slog.Logger) (lowered bool, err error) {
	prev, _ := version.ParseMinor(string(wt.Get(store.BucketCluster, store.ClusterVersionKey)))
	if err := wt.Put(store.BucketCluster, store.ClusterVersionKey, []byte(ver)); err != nil {
		return false, err
	}
	v, err := version.ParseMinor(ver)
	if err != nil {
		log.Warn("the cluster version set does not parse; the storage version stays", "version", ver)
		return false, nil
	}
	lowered = v.Less(prev)
	own, _ := version.ParseMinor(version.StorageVersion)
	if v.Less(oldestStorageVersion) || own.Less(v) {
		return lowered, nil
	}
	return lowered, wt.Put(store.BucketMeta, store.MetaStorageVersion, []byte(v.Full()))
}
