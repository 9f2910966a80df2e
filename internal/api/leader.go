package api

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"
)

// A client that sets the metadata hasleader=true (clientv3.WithRequireLeader)
// wants no answer from a member without a leader: its calls are refused with
// `etcdserver: no leader` and its streams end with that error once the
// member has been leaderless for longer than an election, so that the
// client learns its watch went silent and moves to another member.

func requiresLeader(ctx context.Context) bool {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return false
	}
	for _, v := range md.Get(rpctypes.MetadataRequireLeaderKey) {
		if v == rpctypes.MetadataHasLeader {
			return true
		}
	}
	return false
}

// checkLeader refuses a request that requires a leader while there is none.
func (a *API) checkLeader(ctx context.Context) error {
	if a.s.Leader() == 0 && requiresLeader(ctx) {
		return rpctypes.ErrGRPCNoLeader
	}
	return nil
}

// errLeaderLost is the cause of a require-leader stream's cancellation.
var errLeaderLost = errors.New("the member lost its leader")

func (a *API) streamRequireLeader(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !requiresLeader(ss.Context()) {
		return handler(srv, ss)
	}
	if a.s.Leader() == 0 {
		// As for an auth refusal: answer the first request, or the client
		// would see an EOF on its send instead of the reason.
		ss.RecvMsg(new(emptypb.Empty))
		return rpctypes.ErrGRPCNoLeader
	}
	ctx, cancel := context.WithCancelCause(ss.Context())
	defer cancel(nil)
	lost := a.s.LeaderLost()
	go func() {
		select {
		case <-lost:
			cancel(errLeaderLost)
		case <-ctx.Done():
		}
	}()
	err := handler(srv, &ctxStream{ServerStream: ss, ctx: ctx})
	if errors.Is(context.Cause(ctx), errLeaderLost) {
		return rpctypes.ErrGRPCNoLeader
	}
	return err
}
