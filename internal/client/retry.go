package client

import (
	"context"
	"math/rand/v2"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
)

// Backoff between retries: exponential from retryBaseDelay to retryMaxDelay,
// with jitter so that clients do not retry in lockstep.
const (
	retryBaseDelay = 25 * time.Millisecond
	retryMaxDelay  = time.Second
)

// readOnlyMethods are the RPCs that can be sent twice without harm: reads,
// Authenticate (a second token is as good as the first) and the opening of
// the watch and keep-alive streams.
var readOnlyMethods = map[string]bool{
	"/etcdserverpb.KV/Range":              true,
	"/etcdserverpb.KV/RangeStream":        true,
	"/etcdserverpb.Lease/LeaseTimeToLive": true,
	"/etcdserverpb.Lease/LeaseLeases":     true,
	"/etcdserverpb.Cluster/MemberList":    true,
	"/etcdserverpb.Maintenance/Status":    true,
	"/etcdserverpb.Maintenance/Hash":      true,
	"/etcdserverpb.Maintenance/HashKV":    true,
	"/etcdserverpb.Maintenance/Snapshot":  true,
	"/etcdserverpb.Auth/AuthStatus":       true,
	"/etcdserverpb.Auth/Authenticate":     true,
	"/etcdserverpb.Auth/UserGet":          true,
	"/etcdserverpb.Auth/UserList":         true,
	"/etcdserverpb.Auth/RoleGet":          true,
	"/etcdserverpb.Auth/RoleList":         true,
	"/etcdserverpb.Watch/Watch":           true,
	"/etcdserverpb.Lease/LeaseKeepAlive":  true,
}

// isReadOnly says whether req, sent to method, changes nothing. Txn and
// Alarm requests are read-only or not depending on their content.
func isReadOnly(method string, req any) bool {
	switch r := req.(type) {
	case *pb.TxnRequest:
		return isReadOnlyTxn(r)
	case *pb.AlarmRequest:
		return r.GetAction() == pb.AlarmRequest_GET
	}
	return readOnlyMethods[method]
}

func isReadOnlyTxn(r *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{r.GetSuccess(), r.GetFailure()} {
		for _, op := range ops {
			if op.GetRequestRange() == nil {
				return false
			}
		}
	}
	return true
}

// isRetryable decides whether a call that failed with err may be sent again.
// Reads may always be retried when the member was unavailable; writes only
// when the request provably never reached a member (sent is false) or the
// member refused it before applying anything.
func isRetryable(method string, req any, err error, sent bool) bool {
	if errorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCNotSupportedForLearner) {
		return true
	}
	if errorCode(err) != codes.Unavailable {
		return false
	}
	return !sent || isReadOnly(method, req)
}

// isEndpointFailure says whether err shows that the endpoint it came from is
// not a good place for the next request (unreachable, no leader, learner).
func isEndpointFailure(err error) bool {
	return errorCode(err) == codes.Unavailable ||
		errorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCNotSupportedForLearner)
}

// retryDelay is the pause before retry number attempt (0 for the first).
func retryDelay(attempt int) time.Duration {
	d := retryBaseDelay << min(attempt, 10)
	d = min(d, retryMaxDelay)
	return d/2 + rand.N(d/2+1)
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
