package server

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"

	"github.com/cairnkv/cairn/internal/version"
	"github.com/cairnkv/cairn/pkg/store"
)

// clusterVersion is the version of the cluster in the cluster bucket, as
// etcd's leader records it ("3.7.0"); empty until set.
func (s *Server) clusterVersion() string {
	rt := s.st().Backend().Read()
	defer rt.Close()
	v, _ := rt.Get(store.BucketCluster, []byte("clusterVersion"))
	return string(v)
}

// setClusterVersion has a new leader record the cluster version once, as
// etcd's does after its members have published their attributes.
func (s *Server) setClusterVersion() {
	defer s.wg.Done()
	if s.clusterVersion() == version.StorageVersion {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.requestTimeout())
	defer cancel()
	req := &pb.InternalRaftRequest{ClusterVersionSet: &membershippb.ClusterVersionSetRequest{Ver: version.StorageVersion}}
	if _, err := s.Propose(ctx, req); err != nil {
		s.log.Warn("setting the cluster version failed", "err", err)
		return
	}
	s.log.Info("set the cluster version", "version", version.StorageVersion)
}
