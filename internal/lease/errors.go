package lease

import (
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// Errors of the lessor. The texts of the first three are those of etcd's
// gRPC errors (rpctypes.ErrGRPCLeaseNotFound, ErrGRPCLeaseExist,
// ErrGRPCLeaseTTLTooLarge), so the API layer can map each to the status
// clients expect.
var (
	// ErrLeaseNotFound: no lease has the ID (or it has expired and is being
	// revoked, for Renew).
	ErrLeaseNotFound = errors.New(rpctypes.ErrorDesc(rpctypes.ErrGRPCLeaseNotFound))
	// ErrLeaseExists: Grant of an ID that is already in use.
	ErrLeaseExists = errors.New(rpctypes.ErrorDesc(rpctypes.ErrGRPCLeaseExist))
	// ErrLeaseTTLTooLarge: Grant of a TTL above MaxLeaseTTL.
	ErrLeaseTTLTooLarge = errors.New(rpctypes.ErrorDesc(rpctypes.ErrGRPCLeaseTTLTooLarge))
	// ErrNotPrimary: a request that only the primary (the raft leader) can
	// serve reached a lessor that is not primary; the server forwards it to
	// the leader.
	ErrNotPrimary = errors.New("not a primary lessor")
	// ErrNotConfirmed: Renew on a primary whose leadership no recent round
	// has confirmed.
	ErrNotConfirmed = errors.New("leadership not confirmed recently")
)
