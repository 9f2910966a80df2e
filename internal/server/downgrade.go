package server

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"

	"github.com/cairnkv/cairn/internal/version"
	"github.com/cairnkv/cairn/pkg/store"
)

// A downgrade, as etcd 3.7 runs it: enabling one records its target in the
// cluster bucket; the leader then lowers the cluster version to the target
// (clusterversion.go), and every member its storage version with it, so
// that a member of the older etcd can start on the data dir. Cancelling
// clears the target and the leader raises the cluster version again.

// DowngradeInfo is the downgrade recorded in the cluster bucket (zero when
// none was ever enabled).
func (s *Server) DowngradeInfo() store.DowngradeInfo {
	v := s.readBucketKey(store.BucketCluster, store.ClusterDowngrade)
	if v == "" {
		return store.DowngradeInfo{}
	}
	d, err := store.UnmarshalDowngrade([]byte(v))
	if err != nil {
		s.log.Warn("the downgrade in the cluster bucket does not decode", "err", err)
		return store.DowngradeInfo{}
	}
	return d
}

// Downgrade validates, enables or cancels a downgrade with etcd's rules and
// returns the cluster version as etcd reports it ("3.7"): for an enable or
// a cancel, the one at the point of the log where it applied.
func (s *Server) Downgrade(ctx context.Context, req *pb.DowngradeRequest) (string, error) {
	switch req.Action {
	case pb.DowngradeRequest_VALIDATE, pb.DowngradeRequest_ENABLE, pb.DowngradeRequest_CANCEL:
	default:
		return "", ErrUnknownMethod
	}
	if err := s.LinearizableReadNotify(ctx); err != nil {
		return "", err
	}
	if req.Action == pb.DowngradeRequest_CANCEL {
		if !s.DowngradeInfo().Enabled {
			// etcd 3.7 answers as if it had cancelled one.
			s.log.Warn("no downgrade to cancel")
			return reportedVersion(s.ClusterVersion()), nil
		}
		return s.proposeDowngrade(ctx, &membershippb.DowngradeInfoSetRequest{})
	}
	target, cluster, err := s.validateDowngrade(req.Version)
	if err != nil {
		return "", err
	}
	if req.Action == pb.DowngradeRequest_VALIDATE {
		return cluster.String(), nil
	}
	return s.proposeDowngrade(ctx, &membershippb.DowngradeInfoSetRequest{Enabled: true, Ver: target.Full()})
}

// validateDowngrade checks a target, in etcd's order: a version, exactly
// one minor version below the cluster version, and no downgrade enabled
// already. It returns the target and the cluster version.
func (s *Server) validateDowngrade(target string) (version.Minor, version.Minor, error) {
	t, err := version.ParseMinor(target)
	if err != nil {
		return version.Minor{}, version.Minor{}, ErrWrongDowngradeVersionFormat
	}
	cluster, err := version.ParseMinor(s.ClusterVersion())
	if err != nil {
		return version.Minor{}, version.Minor{}, ErrClusterVersionUnavailable
	}
	if t.Major != cluster.Major || t.Minor != cluster.Minor-1 {
		return version.Minor{}, version.Minor{}, ErrInvalidDowngradeTargetVersion
	}
	if s.DowngradeInfo().Enabled {
		return version.Minor{}, version.Minor{}, ErrDowngradeInProcess
	}
	return t, cluster, nil
}

func (s *Server) proposeDowngrade(ctx context.Context, r *membershippb.DowngradeInfoSetRequest) (string, error) {
	resp, err := s.Propose(ctx, &pb.InternalRaftRequest{DowngradeInfoSet: r})
	if err != nil {
		return "", err
	}
	return resp.(*pb.DowngradeResponse).GetVersion(), nil
}

// applyDowngrade records a downgrade's target and state as etcd writes them
// and answers with the cluster version at this point of the log. The
// caller has the leader check the cluster version once it is committed.
func applyDowngrade(wt *store.WriteTx, r *membershippb.DowngradeInfoSetRequest) applyResult {
	d := store.DowngradeInfo{TargetVersion: r.GetVer(), Enabled: r.GetEnabled()}
	if err := wt.Put(store.BucketCluster, store.ClusterDowngrade, d.Marshal()); err != nil {
		return applyResult{err: err}
	}
	return applyResult{resp: &pb.DowngradeResponse{Version: reportedVersion(string(wt.Get(store.BucketCluster, store.ClusterVersionKey)))}}
}

// reportedVersion is a recorded version ("3.7.0") as etcd reports the
// cluster version ("3.7").
func reportedVersion(v string) string {
	if m, err := version.ParseMinor(v); err == nil {
		return m.String()
	}
	return v
}
