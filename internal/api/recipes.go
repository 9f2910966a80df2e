package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/pkg/store"
)

// The Election and Lock services (election.go, lock.go) run etcd's
// concurrency recipes in the member, on its own KV, lease and watch, as the
// caller (whose user the context carries), so that they contend with
// etcd's clients on the same keys:
//
//   - a contender owns the key name + "/" + its lease ID in hexadecimal,
//     attached to the lease; the key of the name's prefix with the lowest
//     create revision holds the lock, or leads;
//   - a contender waits for the deletion of every key of the prefix created
//     before its own, the latest of them first.
//
// A request without a lease gets a lease of sessionTTL seconds that nobody
// keeps alive, as from etcd: the key goes with it after a minute unless the
// caller keeps the lease alive.

// sessionTTL is the TTL of the lease granted to a request without one.
const sessionTTL = 60

// releaseTimeout bounds the deletion of a key whose wait was given up.
const releaseTimeout = 5 * time.Second

// recipes runs the reads and writes of the recipes through the member's
// services, with their checks (auth, quota, learner).
type recipes struct {
	a  *API
	kv *kvServer
}

func newRecipes(a *API) recipes { return recipes{a: a, kv: &kvServer{a: a}} }

// asEtcds is err as etcd's Election and Lock services answer it: they reach
// the KV through etcd's client, which turns the errors it knows into plain
// errors, sent with code Unknown.
func asEtcds(err error) error {
	if e, ok := rpctypes.Error(err).(rpctypes.EtcdError); ok {
		return status.Error(codes.Unknown, e.Error())
	}
	return err
}

// leaseOf is the lease a contender holds its key with: the request's, or a
// new one of sessionTTL seconds.
func (r recipes) leaseOf(ctx context.Context, id int64) (int64, error) {
	if id != 0 {
		return id, nil
	}
	// Called here, LeaseGrant skips the interceptor that lets only users
	// grant leases while authentication is on: check as it would.
	if err := r.a.s.AuthStore().IsAuthenticated(callerInfo(ctx)); err != nil {
		return 0, toGRPC(err)
	}
	resp, err := (&leaseServer{a: r.a}).LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: sessionTTL})
	if err != nil {
		return 0, err
	}
	return resp.ID, nil
}

// contenders are the keys of the contenders for a name: the range
// [name + "/", name + "0"), '0' being the byte after '/'.
type contenders struct{ prefix, end []byte }

func contendersOf(name []byte) contenders {
	return contenders{prefix: append(bytes.Clone(name), '/'), end: append(bytes.Clone(name), '0')}
}

// key is the key that the holder of lease owns.
func (c contenders) key(lease int64) []byte { return fmt.Appendf(bytes.Clone(c.prefix), "%x", lease) }

// claim creates key with value on lease unless it exists (the same lease
// claimed it before). It returns the key's create revision, the key-value
// it had if it existed, and the header of the claim.
func (r recipes) claim(ctx context.Context, key, value []byte, lease int64) (int64, *mvccpb.KeyValue, *pb.ResponseHeader, error) {
	resp, err := r.kv.Txn(ctx, &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: key, Target: pb.Compare_CREATE, Result: pb.Compare_EQUAL, TargetUnion: &pb.Compare_CreateRevision{}}},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: key, Value: value, Lease: lease}}}},
		Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: key}}}},
	})
	if err != nil {
		return 0, nil, nil, err
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil, resp.Header, nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 { // cannot be: the comparison saw the key in the same transaction
		return 0, nil, nil, fmt.Errorf("key %q vanished while claimed", key)
	}
	return kvs[0].CreateRevision, kvs[0], resp.Header, nil
}

// ifCreatedAt runs op if key is the one created at rev (not deleted since,
// nor created again); the answer's Succeeded tells whether it ran.
func (r recipes) ifCreatedAt(ctx context.Context, key []byte, rev int64, op *pb.RequestOp) (*pb.TxnResponse, error) {
	return r.kv.Txn(ctx, &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: key, Target: pb.Compare_CREATE, Result: pb.Compare_EQUAL, TargetUnion: &pb.Compare_CreateRevision{CreateRevision: rev}}},
		Success: []*pb.RequestOp{op},
	})
}

// firstCreated reads the contender's key with the lowest create revision:
// the holder of a lock, the leader of an election.
func (r recipes) firstCreated(ctx context.Context, c contenders) (*pb.RangeResponse, error) {
	return r.kv.Range(ctx, &pb.RangeRequest{Key: c.prefix, RangeEnd: c.end, Limit: 1,
		SortOrder: pb.RangeRequest_ASCEND, SortTarget: pb.RangeRequest_CREATE})
}

// release deletes key even though ctx has ended, the caller being gone.
func (r recipes) release(ctx context.Context, key []byte) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	r.kv.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: key})
}

// waitEarlier waits until no contender's key created at or before
// maxCreate is left, each time for the deletion of the latest of them.
func (r recipes) waitEarlier(ctx context.Context, c contenders, maxCreate int64) error {
	for {
		resp, err := r.kv.Range(ctx, &pb.RangeRequest{Key: c.prefix, RangeEnd: c.end, Limit: 1,
			MaxCreateRevision: maxCreate, SortOrder: pb.RangeRequest_DESCEND, SortTarget: pb.RangeRequest_CREATE})
		if err != nil {
			return err
		}
		if len(resp.Kvs) == 0 {
			return nil
		}
		// Cut short by a compaction or a new store, the wait reads again.
		_, err = r.watch(ctx, resp.Kvs[0].Key, nil, resp.Header.Revision+1, func(ev *mvccpb.Event) (bool, error) {
			return ev.Type == mvccpb.DELETE, nil
		})
		if err != nil {
			return err
		}
	}
}

// watch hands fn the events of [key, end) from revision rev, from the
// member's store, until fn is done (true) or fails, or ctx ends. It answers
// false when a compaction or a snapshot that replaced the store cut the
// watch short: the caller reads again to know where it stands.
func (r recipes) watch(ctx context.Context, key, end []byte, rev int64, fn func(*mvccpb.Event) (bool, error)) (bool, error) {
	replaced := r.a.s.StoreReplaced()
	ws := r.a.s.Store().NewWatchStream()
	defer ws.Close()
	if _, err := ws.Watch(store.AutoWatchID, key, end, rev, store.WatchOptions{}); err != nil {
		if errors.Is(err, store.ErrCompacted) {
			return false, nil
		}
		return false, toGRPC(err)
	}
	for {
		select {
		case <-ctx.Done():
			return false, toGRPC(ctx.Err())
		case <-replaced:
			return false, nil
		case resp, ok := <-ws.Chan():
			if !ok || resp.CompactRevision != 0 {
				return false, nil
			}
			for _, ev := range resp.Events {
				if done, err := fn(ev); done || err != nil {
					return done, err
				}
			}
		}
	}
}
