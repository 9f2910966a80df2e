package api

import (
	"context"
	"crypto/sha256"
	"io"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/internal/version"
)

type maintenanceServer struct {
	pb.UnimplementedMaintenanceServer
	a *API
}

func (m *maintenanceServer) Status(ctx context.Context, req *pb.StatusRequest) (*pb.StatusResponse, error) {
	s := m.a.s
	st := s.Store()
	resp := &pb.StatusResponse{
		Header:           m.a.header(0),
		Version:          version.ServerVersion,
		DbSize:           st.Backend().Size(),
		DbSizeInUse:      st.Backend().SizeInUse(),
		Leader:           s.Leader(),
		RaftIndex:        s.CommittedIndex(),
		RaftTerm:         s.Term(),
		RaftAppliedIndex: s.AppliedIndex(),
		StorageVersion:   s.StorageVersion(),
		DbSizeQuota:      s.Config().QuotaBackendBytes,
	}
	d := s.DowngradeInfo()
	resp.DowngradeInfo = &pb.DowngradeInfo{Enabled: d.Enabled, TargetVersion: d.TargetVersion}
	if me, ok := s.Member(s.ID()); ok {
		resp.IsLearner = me.IsLearner
	}
	if s.Leader() == 0 {
		resp.Errors = append(resp.Errors, "etcdserver: no leader")
	}
	for _, a := range s.Alarms() {
		resp.Errors = append(resp.Errors, "memberID:"+formatID(a.MemberID)+" alarm:"+a.Alarm.String())
	}
	return resp, nil
}

func (m *maintenanceServer) Alarm(ctx context.Context, req *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	if req.Action == pb.AlarmRequest_GET {
		return &pb.AlarmResponse{Header: m.a.header(0), Alarms: m.a.s.Alarms()}, nil
	}
	resp, err := m.a.s.Propose(ctx, &pb.InternalRaftRequest{Alarm: req})
	if err != nil {
		return nil, toGRPC(err)
	}
	r := resp.(*pb.AlarmResponse)
	m.a.fillHeader(&r.Header)
	return r, nil
}

func (m *maintenanceServer) Defragment(ctx context.Context, req *pb.DefragmentRequest) (*pb.DefragmentResponse, error) {
	m.a.setDefragging(true)
	start := time.Now()
	err := m.a.s.Store().Backend().Defrag()
	m.a.metrics.BackendDefrag.Observe(time.Since(start).Seconds())
	m.a.setDefragging(false)
	if err != nil {
		return nil, toGRPC(err)
	}
	return &pb.DefragmentResponse{}, nil // no header, as etcd's
}

func (m *maintenanceServer) Hash(ctx context.Context, req *pb.HashRequest) (*pb.HashResponse, error) {
	start := time.Now()
	h, err := m.a.s.Store().Hash()
	m.a.metrics.Hash.Observe(time.Since(start).Seconds())
	if err != nil {
		return nil, toGRPC(err)
	}
	return &pb.HashResponse{Header: m.a.header(0), Hash: h}, nil
}

func (m *maintenanceServer) HashKV(ctx context.Context, req *pb.HashKVRequest) (*pb.HashKVResponse, error) {
	start := time.Now()
	h, err := m.a.s.Store().HashKV(req.Revision)
	m.a.metrics.HashRev.Observe(time.Since(start).Seconds())
	if err != nil {
		return nil, toGRPC(err)
	}
	return &pb.HashKVResponse{Header: m.a.header(0), Hash: h.Hash, CompactRevision: h.CompactRevision, HashRevision: h.HashRevision}, nil
}

// snapshotChunk is the size of each Snapshot stream message.
const snapshotChunk = 32 * 1024

// Snapshot streams the db followed by its sha256, as etcd does: messages
// without a header, each with the bytes that remain after it.
func (m *maintenanceServer) Snapshot(req *pb.SnapshotRequest, stream grpc.ServerStreamingServer[pb.SnapshotResponse]) error {
	st := m.a.s.Store()
	storageVersion := m.a.s.StorageVersion()
	// The size is that of the last commit: commit the pending writes
	// first, as WriteSnapshot does, so that the total counts them.
	if err := st.Backend().ForceCommit(); err != nil {
		return toGRPC(err)
	}
	total := uint64(st.Backend().SnapshotSize())
	pr, pw := io.Pipe()
	go func() {
		start := time.Now()
		_, err := st.Backend().WriteSnapshot(pw)
		m.a.metrics.BackendSnapshot.Observe(time.Since(start).Seconds())
		pw.CloseWithError(err)
	}()
	defer pr.Close()
	h := sha256.New()
	buf := make([]byte, snapshotChunk)
	sent := uint64(0)
	for {
		n, err := io.ReadFull(pr, buf)
		if n > 0 {
			h.Write(buf[:n])
			sent += uint64(n)
			remaining := uint64(0)
			if total > sent {
				remaining = total - sent
			}
			if serr := stream.Send(&pb.SnapshotResponse{RemainingBytes: remaining, Blob: append([]byte(nil), buf[:n]...), Version: storageVersion}); serr != nil {
				return serr
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return toGRPC(err)
		}
	}
	return stream.Send(&pb.SnapshotResponse{Blob: h.Sum(nil), Version: storageVersion})
}

func (m *maintenanceServer) MoveLeader(ctx context.Context, req *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	if err := m.a.s.MoveLeader(ctx, req.TargetID); err != nil {
		return nil, toGRPC(err)
	}
	return &pb.MoveLeaderResponse{Header: m.a.header(0)}, nil
}

// Downgrade validates, enables or cancels a downgrade of the cluster.
func (m *maintenanceServer) Downgrade(ctx context.Context, req *pb.DowngradeRequest) (*pb.DowngradeResponse, error) {
	v, err := m.a.s.Downgrade(ctx, req)
	if err != nil {
		return nil, toGRPC(err)
	}
	return &pb.DowngradeResponse{Header: m.a.header(0), Version: v}, nil
}
