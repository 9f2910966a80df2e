package api

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/internal/lease"
	"github.com/cairnkv/cairn/internal/server"
	"github.com/cairnkv/cairn/pkg/store"
)

// grpcErrors maps the errors of the store, the lessor and the member to the
// gRPC errors etcd returns, which clientv3 turns back into its own values.
var grpcErrors = map[error]error{
	store.ErrEmptyKey:             rpctypes.ErrGRPCEmptyKey,
	store.ErrKeyNotFound:          rpctypes.ErrGRPCKeyNotFound,
	store.ErrValueProvided:        rpctypes.ErrGRPCValueProvided,
	store.ErrLeaseProvided:        rpctypes.ErrGRPCLeaseProvided,
	store.ErrTooManyOps:           rpctypes.ErrGRPCTooManyOps,
	store.ErrDuplicateKey:         rpctypes.ErrGRPCDuplicateKey,
	store.ErrCompacted:            rpctypes.ErrGRPCCompacted,
	store.ErrInvalidSortOption:    rpctypes.ErrGRPCInvalidSortOption,
	store.ErrFutureRev:            rpctypes.ErrGRPCFutureRev,
	lease.ErrLeaseNotFound:        rpctypes.ErrGRPCLeaseNotFound,
	lease.ErrLeaseExists:          rpctypes.ErrGRPCLeaseExist,
	lease.ErrLeaseTTLTooLarge:     rpctypes.ErrGRPCLeaseTTLTooLarge,
	server.ErrNoSpace:             rpctypes.ErrGRPCNoSpace,
	server.ErrCorrupt:             rpctypes.ErrGRPCCorrupt,
	server.ErrNoLeader:            rpctypes.ErrGRPCNoLeader,
	server.ErrLeaderChanged:       rpctypes.ErrGRPCLeaderChanged,
	server.ErrNotLeader:           rpctypes.ErrGRPCNotLeader,
	server.ErrTimeout:             rpctypes.ErrGRPCTimeout,
	server.ErrStopped:             rpctypes.ErrGRPCStopped,
	server.ErrRequestTooLarge:     rpctypes.ErrGRPCRequestTooLarge,
	server.ErrMemberNotFound:      rpctypes.ErrGRPCMemberNotFound,
	server.ErrMemberIDRemoved:     rpctypes.ErrGRPCMemberNotFound, // as etcd: the client sees no difference
	server.ErrMemberExists:        rpctypes.ErrGRPCMemberExist,
	server.ErrPeerURLExists:       rpctypes.ErrGRPCPeerURLExist,
	server.ErrMemberNotLearner:    rpctypes.ErrGRPCMemberNotLearner,
	server.ErrNotLearnerReady:     rpctypes.ErrGRPCLearnerNotReady,
	server.ErrTooManyLearners:     rpctypes.ErrGRPCTooManyLearners,
	server.ErrLearnerNotReady:     rpctypes.ErrGRPCNotSupportedForLearner,
	server.ErrUnhealthy:           rpctypes.ErrGRPCUnhealthy,
	server.ErrNotEnoughStarted:    rpctypes.ErrGRPCMemberNotEnoughStarted,
	server.ErrBadLeaderTransferee: rpctypes.ErrGRPCBadLeaderTransferee,

	server.ErrTimeoutDueToLeaderFail:     rpctypes.ErrGRPCTimeoutDueToLeaderFail,
	server.ErrTimeoutDueToConnectionLost: rpctypes.ErrGRPCTimeoutDueToConnectionLost,

	server.ErrWrongDowngradeVersionFormat:   rpctypes.ErrGRPCWrongDowngradeVersionFormat,
	server.ErrInvalidDowngradeTargetVersion: rpctypes.ErrGRPCInvalidDowngradeTargetVersion,
	server.ErrClusterVersionUnavailable:     rpctypes.ErrGRPCClusterVersionUnavailable,
	server.ErrDowngradeInProcess:            rpctypes.ErrGRPCDowngradeInProcess,
}

// toGRPC returns the gRPC error a client expects for err.
func toGRPC(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	for e, g := range grpcErrors {
		if errors.Is(err, e) {
			return g
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return rpctypes.ErrGRPCCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return rpctypes.ErrGRPCDeadlineExceeded
	}
	return status.Error(codes.Unknown, err.Error())
}
