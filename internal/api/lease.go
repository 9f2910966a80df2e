package api

import (
	"context"
	"io"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/internal/lease"
)

type leaseServer struct {
	pb.UnimplementedLeaseServer
	a *API
}

func (l *leaseServer) LeaseGrant(ctx context.Context, req *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	if err := l.a.s.CheckQuota(ctx, &pb.InternalRaftRequest{LeaseGrant: req}); err != nil {
		return nil, toGRPC(err)
	}
	resp, err := l.a.s.LeaseGrant(ctx, req)
	if err != nil {
		return nil, toGRPC(err)
	}
	l.a.fillHeader(&resp.Header)
	return resp, nil
}

func (l *leaseServer) LeaseRevoke(ctx context.Context, req *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	resp, err := l.a.s.LeaseRevoke(ctx, req)
	if err != nil {
		return nil, toGRPC(err)
	}
	l.a.fillHeader(&resp.Header)
	return resp, nil
}

func (l *leaseServer) LeaseKeepAlive(stream grpc.BidiStreamingServer[pb.LeaseKeepAliveRequest, pb.LeaseKeepAliveResponse]) error {
	// Renewals run apart, so that the stream ends when its context does
	// (a require-leader stream on a member that lost its leader) even while
	// it waits for the client's next request.
	errc := make(chan error, 1)
	go func() { errc <- l.keepAlive(stream) }()
	select {
	case err := <-errc:
		return err
	case <-stream.Context().Done():
		return stream.Context().Err()
	}
}

func (l *leaseServer) keepAlive(stream grpc.BidiStreamingServer[pb.LeaseKeepAliveRequest, pb.LeaseKeepAliveResponse]) error {
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		// auth: renewing a lease needs write on every key attached to it,
		// as revoking it does; a refusal ends the stream, as in etcd.
		if as := l.a.s.AuthStore(); as.Enabled() {
			if err := as.AreLeaseKeysWritable(callerInfo(stream.Context()), l.a.s.Store().LeaseKeys(req.ID)); err != nil {
				return toGRPC(err)
			}
		}
		ttl, err := l.a.s.LeaseRenew(stream.Context(), req.ID)
		if err != nil && toGRPC(err) != toGRPC(lease.ErrLeaseNotFound) {
			return toGRPC(err)
		}
		// An unknown or expired lease answers with TTL 0, as etcd does.
		resp := &pb.LeaseKeepAliveResponse{Header: l.a.header(0), ID: req.ID, TTL: ttl}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

func (l *leaseServer) LeaseTimeToLive(ctx context.Context, req *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	// auth: an answer that names the lease's keys needs read on each of
	// them; without keys, any authenticated user may ask, as in etcd.
	check := l.a.s.AuthStore().IsAuthenticated
	if req.Keys {
		check = func(info auth.Info) error { return l.a.s.CheckLeaseKeysReadable(info, req.ID) }
	}
	if err := check(callerInfo(ctx)); err != nil {
		return nil, toGRPC(err)
	}
	info, err := l.a.s.LeaseTimeToLive(ctx, req.ID, req.Keys)
	if err == lease.ErrLeaseNotFound {
		// etcd answers a missing lease with TTL -1 rather than an error.
		return &pb.LeaseTimeToLiveResponse{Header: l.a.header(0), ID: req.ID, TTL: -1}, nil
	}
	if err != nil {
		return nil, toGRPC(err)
	}
	return &pb.LeaseTimeToLiveResponse{Header: l.a.header(0), ID: req.ID, TTL: info.TTL, GrantedTTL: info.GrantedTTL, Keys: info.Keys}, nil
}

func (l *leaseServer) LeaseLeases(ctx context.Context, req *pb.LeaseLeasesRequest) (*pb.LeaseLeasesResponse, error) {
	resp := &pb.LeaseLeasesResponse{Header: l.a.header(0)}
	for _, id := range l.a.s.Lessor().Leases() {
		// auth: as etcd 3.7, a user may list the leases only if it may read
		// every key attached to any of them.
		if err := l.a.s.CheckLeaseKeysReadable(callerInfo(ctx), id); err != nil {
			return nil, toGRPC(err)
		}
		resp.Leases = append(resp.Leases, &pb.LeaseStatus{ID: id})
	}
	return resp, nil
}
