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

// noLeaderProofWindow is how soon an "etcdserver: no leader" answer must
// come for a write to be sent again elsewhere. A member without a leader
// refuses a write at once, before proposing it, and a raft that drops a
// proposal says so at once too; but a server may also report a proposal
// that timed out while it had no leader as "no leader" (cairn's did, at
// the deadline the client gave or after its own 5 s and more), and then the
// write may have been committed. Answers slower than this, or than half the
// time the caller allowed, are treated as of unknown outcome.
const noLeaderProofWindow = time.Second

// isNoLeader says whether err is a member's "etcdserver: no leader".
func isNoLeader(err error) bool {
	return err != nil && errorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCNoLeader)
}

// provesNotExecuted says whether err, received elapsed after the request
// was sent with budget left before the caller's deadline (0: none), shows
// that the member did not execute the request: it refused it at once for
// want of a leader, not when the request's time ran out.
func provesNotExecuted(err error, elapsed, budget time.Duration) bool {
	if !isNoLeader(err) || errorCode(err) != codes.Unavailable || elapsed >= noLeaderProofWindow {
		return false
	}
	return budget <= 0 || elapsed < budget/2
}

// needsLeader says whether req, sent to method, can only be served by a
// member that has a leader: writes, linearizable reads, lease operations
// and Authenticate. Such calls carry etcd's require-leader metadata, so that
// a member without a leader fails them at once instead of holding them.
func needsLeader(method string, req any) bool {
	switch r := req.(type) {
	case *pb.RangeRequest:
		return !r.GetSerializable()
	case *pb.PutRequest, *pb.DeleteRangeRequest, *pb.TxnRequest, *pb.CompactionRequest,
		*pb.LeaseGrantRequest, *pb.LeaseRevokeRequest, *pb.LeaseTimeToLiveRequest, *pb.LeaseLeasesRequest:
		return true
	}
	return method == authenticateMethod
}
