package store

import "errors"

// Errors of the store. The texts are etcd's, so that the API layer can map
// each to the gRPC error clients expect.
var (
	ErrCompacted     = errors.New("mvcc: required revision has been compacted")
	ErrFutureRev     = errors.New("mvcc: required revision is a future revision")
	ErrKeyNotFound   = errors.New("etcdserver: key not found")
	ErrEmptyKey      = errors.New("etcdserver: key is not provided")
	ErrDuplicateKey  = errors.New("etcdserver: duplicate key given in txn request")
	ErrTooManyOps    = errors.New("etcdserver: too many operations in txn request")
	ErrValueProvided = errors.New("etcdserver: value is provided")
	ErrLeaseProvided = errors.New("etcdserver: lease is provided")

	ErrInvalidSortOption = errors.New("etcdserver: invalid sort option")
)
