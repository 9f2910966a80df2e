package server

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"

	"github.com/cairnkv/cairn/internal/clusterversion"
	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/cluster"
)

// The member's side of the cluster version and downgrades
// (internal/clusterversion): the calls internal/api makes, the apply of
// the requests, and the leader's loop that proposes the cluster version.

// ClusterVersion is the version of the cluster in the cluster bucket, as
// etcd's leader records it ("3.7.0"); empty until set.
func (s *Server) ClusterVersion() string { return clusterversion.ClusterVersion(s.st()) }

// StorageVersion is the version of the db's layout in the meta bucket
// ("3.7.0"); it follows the cluster version, as etcd's does.
func (s *Server) StorageVersion() string { return clusterversion.StorageVersion(s.st()) }

// DowngradeInfo is the downgrade recorded in the cluster bucket (zero when
// none was ever enabled).
func (s *Server) DowngradeInfo() cluster.DowngradeInfo {
	return clusterversion.DowngradeInfo(s.st(), s.log)
}

// Downgrade validates, enables or cancels a downgrade with etcd's rules and
// returns the cluster version as etcd reports it ("3.7").
func (s *Server) Downgrade(ctx context.Context, req *pb.DowngradeRequest) (string, error) {
	switch req.Action {
	case pb.DowngradeRequest_VALIDATE, pb.DowngradeRequest_ENABLE, pb.DowngradeRequest_CANCEL:
	default:
		return "", ErrUnknownMethod
	}
	return clusterversion.Downgrade(ctx, memberView{s}, s.log, req)
}

// applyDowngrade records a downgrade's target and state; the caller has
// the leader check the cluster version once it is committed.
func applyDowngrade(wt *backend.WriteTx, r *membershippb.DowngradeInfoSetRequest) applyResult {
	resp, err := clusterversion.ApplyDowngrade(wt, r)
	if err != nil {
		return applyResult{err: err}
	}
	return applyResult{resp: resp}
}

// applyClusterVersion records a new cluster version and the storage
// version with it; lowering it forces a raft snapshot.
func (s *Server) applyClusterVersion(wt *backend.WriteTx, ver string) error {
	lowered, err := clusterversion.ApplyClusterVersion(wt, ver, s.log)
	if lowered {
		s.snapshotForced = true
	}
	return err
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
		want := clusterversion.Wanted(s.st(), s.log)
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
	ctx, cancel := context.WithTimeout(context.Background(), s.RequestTimeout())
	defer cancel()
	_, err := s.Propose(ctx, &pb.InternalRaftRequest{ClusterVersionSet: &membershippb.ClusterVersionSetRequest{Ver: v}})
	return err
}
