package server

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"

	"github.com/cairnkv/cairn/internal/version"
	"github.com/cairnkv/cairn/pkg/store"
)

// ClusterVersion is the version of the cluster in the cluster bucket, as
// etcd's leader records it ("3.7.0"); empty until set.
func (s *Server) ClusterVersion() string {
	return s.readBucketKey(store.BucketCluster, store.ClusterVersionKey)
}

// StorageVersion is the version of the db's layout in the meta bucket
// ("3.7.0"); it follows the cluster version, as etcd's does.
func (s *Server) StorageVersion() string {
	return s.readBucketKey(store.BucketMeta, store.MetaStorageVersion)
}

func (s *Server) readBucketKey(bucket, key []byte) string {
	rt := s.st().Backend().Read()
	defer rt.Close()
	v, _ := rt.Get(bucket, key)
	return string(v)
}

// wantedClusterVersion is the version the leader keeps the cluster at:
// the downgrade target while a downgrade is enabled, else cairn's own
// (every member runs the same version).
func (s *Server) wantedClusterVersion() string {
	if d := s.DowngradeInfo(); d.Enabled {
		return d.TargetVersion
	}
	return version.StorageVersion
}

// checkClusterVersion has the leader look at the cluster version again.
func (s *Server) checkClusterVersion() {
	select {
	case s.versionCheck <- struct{}{}:
	default: // a check is pending already
	}
}

// clusterVersionLoop, on the leader, proposes the wanted cluster version
// whenever it differs from the recorded one: once a leader is elected, and
// after a downgrade is enabled or cancelled. One loop proposes, so that two
// changes cannot land in the wrong order.
func (s *Server) clusterVersionLoop() {
	defer s.wg.Done()
	var retry <-chan time.Time
	for {
		select {
		case <-s.stopc:
			return
		case <-s.versionCheck:
		case <-retry:
		}
		retry = nil
		if s.leaderID.Load() != s.id {
			continue
		}
		want := s.wantedClusterVersion()
		if s.ClusterVersion() == want {
			continue
		}
		if err := s.proposeClusterVersion(want); err != nil {
			s.log.Warn("setting the cluster version failed", "version", want, "err", err)
			retry = time.After(s.cfg.ElectionTimeout)
			continue
		}
		s.log.Info("set the cluster version", "version", want)
	}
}

func (s *Server) proposeClusterVersion(v string) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.requestTimeout())
	defer cancel()
	_, err := s.Propose(ctx, &pb.InternalRaftRequest{ClusterVersionSet: &membershippb.ClusterVersionSetRequest{Ver: v}})
	return err
}

// oldestStorageVersion is the oldest layout the db may be declared as:
// etcd 3.6 reads cairn's (etcd 3.7's) layout as its own, older ones
// differ.
var oldestStorageVersion = version.Minor{Major: 3, Minor: 6}

// applyClusterVersion records a new cluster version, and the storage
// version with it, as etcd does once the cluster version changes, so that
// a member of the older version can start on the db after a downgrade.
// Lowering the cluster version forces a raft snapshot, as etcd does: the
// v2 store of the newest snapshot then has the lowered version too.
func (s *Server) applyClusterVersion(wt *store.WriteTx, ver string) error {
	prev, _ := version.ParseMinor(string(wt.Get(store.BucketCluster, store.ClusterVersionKey)))
	if err := wt.Put(store.BucketCluster, store.ClusterVersionKey, []byte(ver)); err != nil {
		return err
	}
	v, err := version.ParseMinor(ver)
	if err != nil {
		s.log.Warn("the cluster version set does not parse; the storage version stays", "version", ver)
		return nil
	}
	if v.Less(prev) {
		s.snapshotForced = true
	}
	own, _ := version.ParseMinor(version.StorageVersion)
	if v.Less(oldestStorageVersion) || own.Less(v) {
		return nil
	}
	return wt.Put(store.BucketMeta, store.MetaStorageVersion, []byte(v.Full()))
}
