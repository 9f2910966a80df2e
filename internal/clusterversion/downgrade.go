package clusterversion

import (
	"context"
	"errors"
	"log/slog"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"

	"github.com/cairnkv/cairn/internal/version"
	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/cluster"
	"github.com/cairnkv/cairn/pkg/store"
)

// A downgrade, as etcd 3.7 runs it: enabling one records its target in the
// cluster bucket; the leader then lowers the cluster version to the target
// (Wanted), and every member its storage version with it, so that a member
// of the older etcd can start on the data dir. Cancelling clears the
// target and the leader raises the cluster version again.

// The refusals of a downgrade, with etcd's texts.
var (
	ErrWrongDowngradeVersionFormat   = errors.New("etcdserver: wrong downgrade target version format")
	ErrInvalidDowngradeTargetVersion = errors.New("etcdserver: invalid downgrade target version")
	ErrClusterVersionUnavailable     = errors.New("etcdserver: cluster version not found during downgrade")
	ErrDowngradeInProcess            = errors.New("etcdserver: cluster has a downgrade job in progress")
)

// DowngradeInfo is the downgrade recorded in the cluster bucket (zero when
// none was ever enabled).
func DowngradeInfo(st *store.Store, log *slog.Logger) cluster.DowngradeInfo {
	v := readBucketKey(st, store.BucketCluster, store.ClusterDowngrade)
	if v == "" {
		return cluster.DowngradeInfo{}
	}
	d, err := cluster.UnmarshalDowngrade([]byte(v))
	if err != nil {
		log.Warn("the downgrade in the cluster bucket does not decode", "err", err)
		return cluster.DowngradeInfo{}
	}
	return d
}

// Downgrade validates, enables or cancels a downgrade (req.Action is one of
// the three) with etcd's rules and returns the cluster version as etcd
// reports it ("3.7"): for an enable or a cancel, the one at the point of
// the log where it applied.
func Downgrade(ctx context.Context, m Member, log *slog.Logger, req *pb.DowngradeRequest) (string, error) {
	if err := m.LinearizableReadNotify(ctx); err != nil {
		return "", err
	}
	if req.Action == pb.DowngradeRequest_CANCEL {
		if !DowngradeInfo(m.Store(), log).Enabled {
			// etcd 3.7 answers as if it had cancelled one.
			log.Warn("no downgrade to cancel")
			return reportedVersion(ClusterVersion(m.Store())), nil
		}
		return proposeDowngrade(ctx, m, &membershippb.DowngradeInfoSetRequest{})
	}
	target, cluster, err := validateDowngrade(m.Store(), log, req.Version)
	if err != nil {
		return "", err
	}
	if req.Action == pb.DowngradeRequest_VALIDATE {
		return cluster.String(), nil
	}
	return proposeDowngrade(ctx, m, &membershippb.DowngradeInfoSetRequest{Enabled: true, Ver: target.Full()})
}

// validateDowngrade checks a target, in etcd's order: a version, exactly
// one minor version below the cluster version, and no downgrade enabled
// already. It returns the target and the cluster version.
func validateDowngrade(st *store.Store, log *slog.Logger, target string) (version.Minor, version.Minor, error) {
	t, err := version.ParseMinor(target)
	if err != nil {
		return version.Minor{}, version.Minor{}, ErrWrongDowngradeVersionFormat
	}
	cluster, err := version.ParseMinor(ClusterVersion(st))
	if err != nil {
		return version.Minor{}, version.Minor{}, ErrClusterVersionUnavailable
	}
	if t.Major != cluster.Major || t.Minor != cluster.Minor-1 {
		return version.Minor{}, version.Minor{}, ErrInvalidDowngradeTargetVersion
	}
	if DowngradeInfo(st, log).Enabled {
		return version.Minor{}, version.Minor{}, ErrDowngradeInProcess
	}
	return t, cluster, nil
}

func proposeDowngrade(ctx context.Context, m Member, r *membershippb.DowngradeInfoSetRequest) (string, error) {
	resp, err := m.Propose(ctx, &pb.InternalRaftRequest{DowngradeInfoSet: r})
	if err != nil {
		return "", err
	}
	return resp.(*pb.DowngradeResponse).GetVersion(), nil
}

// ApplyDowngrade records a downgrade's target and state as etcd writes them
// and answers with the cluster version at this point of the log. The
// caller has the leader check the cluster version once it is committed.
func ApplyDowngrade(wt *backend.WriteTx, r *membershippb.DowngradeInfoSetRequest) (*pb.DowngradeResponse, error) {
	d := cluster.DowngradeInfo{TargetVersion: r.GetVer(), Enabled: r.GetEnabled()}
	if err := wt.Put(store.BucketCluster, store.ClusterDowngrade, d.Marshal()); err != nil {
		return nil, err
	}
	return &pb.DowngradeResponse{Version: reportedVersion(string(wt.Get(store.BucketCluster, store.ClusterVersionKey)))}, nil
}

// reportedVersion is a recorded version ("3.7.0") as etcd reports the
// cluster version ("3.7").
func reportedVersion(v string) string {
	if m, err := version.ParseMinor(v); err == nil {
		return m.String()
	}
	return v
}
