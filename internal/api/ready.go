package api

import (
	"context"

	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/internal/server"
)

// A member serves no client request before it is ready (server.Ready): it
// has a leader and has caught up with the cluster. Until then calls wait,
// as etcd's do, rather than fail for want of a leader that is being elected.

func (a *API) waitReady(ctx context.Context) error {
	select {
	case <-a.s.Ready():
		return nil
	default:
	}
	select {
	case <-a.s.Ready():
		return nil
	case <-ctx.Done():
		return toGRPC(ctx.Err())
	case <-a.s.Done():
		return toGRPC(server.ErrStopped)
	}
}

func (a *API) streamWaitReady(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := a.waitReady(ss.Context()); err != nil {
		return err
	}
	return handler(srv, ss)
}
