package api

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/internal/featuregate"
	"github.com/cairnkv/cairn/pkg/store"
)

type kvServer struct {
	pb.UnimplementedKVServer
	a *API
}

// propose sends a write through raft after the checks etcd makes at the API:
// a learner takes no writes, and a write must fit in the quota.
func (a *API) propose(ctx context.Context, req *pb.InternalRaftRequest) (proto.Message, error) {
	if a.s.IsLearner() {
		return nil, rpctypes.ErrGRPCNotSupportedForLearner
	}
	if err := a.s.CheckQuota(ctx, req); err != nil {
		return nil, toGRPC(err)
	}
	resp, err := a.s.Propose(ctx, req)
	return resp, toGRPC(err)
}

// checkShape refuses a KV request of an invalid shape (no key, a put that
// keeps its value or lease and gives one, a txn with too many operations
// or a key written twice, ...). It runs before auth (api.go's unary), as
// etcd's gRPC handlers check the shape before the request reaches the
// server, which resolves the token and checks permissions: a malformed
// request gets its own error whoever sends it. Called directly (recipes),
// the handlers leave the checks to the store, which makes them again.
func (a *API) checkShape(req any) error {
	switch r := req.(type) {
	case *pb.RangeRequest:
		return store.ValidateRange(r)
	case *pb.PutRequest:
		return store.ValidatePut(r)
	case *pb.DeleteRangeRequest:
		if len(r.Key) == 0 {
			return store.ErrEmptyKey
		}
	case *pb.TxnRequest:
		return store.ValidateTxn(r, a.s.Config().MaxTxnOps)
	}
	return nil
}

func (k *kvServer) Range(ctx context.Context, req *pb.RangeRequest) (*pb.RangeResponse, error) {
	var resp *pb.RangeResponse
	err := k.serveRange(ctx, req, func() (err error) {
		resp, err = k.a.s.Store().Range(req)
		return err
	})
	if err != nil {
		return nil, err
	}
	k.a.fillHeader(&resp.Header)
	return resp, nil
}

// serveRange runs a range's checks and metrics around read, which reads
// the store; the error is the gRPC one.
func (k *kvServer) serveRange(ctx context.Context, req *pb.RangeRequest, read func() error) (err error) {
	defer func(start time.Time) { k.a.metrics.Request("Range", err == nil, time.Since(start)) }(time.Now())
	info, err := k.beforeRange(ctx, req)
	if err != nil {
		return err
	}
	start := time.Now()
	err = read()
	k.a.metrics.Range(err == nil, time.Since(start))
	if err != nil {
		return toGRPC(err)
	}
	return toGRPC(k.a.s.AuthStore().CheckSameRevision(info))
}

// beforeRange makes the checks of a range before it reads: the member
// may serve it, the read is linearizable unless serializable, the caller
// may read the range. It returns the caller's auth info for the check
// after the read.
func (k *kvServer) beforeRange(ctx context.Context, req *pb.RangeRequest) (auth.Info, error) {
	// A learner refuses linearizable reads, as etcd's, unless the gate
	// LearnerLinearizableReads is on: then it reads as a follower does,
	// through the leader's read index (raft forwards the learner's
	// MsgReadIndex to the leader) once it has applied that far.
	if !req.Serializable && k.a.s.IsLearner() && !k.a.s.Config().Features.Enabled(featuregate.LearnerLinearizableReads) {
		return auth.Info{}, rpctypes.ErrGRPCNotSupportedForLearner
	}
	if !req.Serializable {
		if err := k.a.s.LinearizableReadNotify(ctx); err != nil {
			return auth.Info{}, toGRPC(err)
		}
	}
	// auth: read permission on the range, as of the state now applied;
	// and, as etcd, no answer if the auth state is not the one the
	// caller's token was checked at (moved during the read, or a JWT
	// issued at another revision).
	info := callerInfo(ctx)
	if err := k.a.s.AuthStore().IsRangePermitted(info, req.Key, req.RangeEnd); err != nil {
		return auth.Info{}, toGRPC(err)
	}
	return info, nil
}

// rangeStreamChunk is the number of key-values per RangeStream message.
const rangeStreamChunk = 1000

// RangeStream makes a range's checks in the order of a unary range's: the
// shape, then auth (its rule is ruleSkip in the stream interceptor).
func (k *kvServer) RangeStream(req *pb.RangeRequest, stream grpc.ServerStreamingServer[pb.RangeStreamResponse]) error {
	if err := k.a.checkShape(req); err != nil {
		return toGRPC(err)
	}
	ctx, err := k.a.guard(stream.Context(), pb.KV_Range_FullMethodName, req)
	if err != nil {
		return toGRPC(err)
	}
	resp, err := k.Range(ctx, req)
	if err != nil {
		return err
	}
	kvs := resp.Kvs
	for len(kvs) > rangeStreamChunk {
		if err := stream.Send(&pb.RangeStreamResponse{RangeResponse: &pb.RangeResponse{Kvs: kvs[:rangeStreamChunk]}}); err != nil {
			return err
		}
		kvs = kvs[rangeStreamChunk:]
	}
	resp.Kvs = kvs
	return stream.Send(&pb.RangeStreamResponse{RangeResponse: resp})
}

func (k *kvServer) Put(ctx context.Context, req *pb.PutRequest) (*pb.PutResponse, error) {
	resp, err := k.a.propose(ctx, &pb.InternalRaftRequest{Put: req})
	if err != nil {
		return nil, err
	}
	r := resp.(*pb.PutResponse)
	k.a.fillHeader(&r.Header)
	return r, nil
}

func (k *kvServer) DeleteRange(ctx context.Context, req *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	resp, err := k.a.propose(ctx, &pb.InternalRaftRequest{DeleteRange: req})
	if err != nil {
		return nil, err
	}
	r := resp.(*pb.DeleteRangeResponse)
	k.a.fillHeader(&r.Header)
	return r, nil
}

func (k *kvServer) Txn(ctx context.Context, req *pb.TxnRequest) (*pb.TxnResponse, error) {
	resp, err := k.a.propose(ctx, &pb.InternalRaftRequest{Txn: req})
	if err != nil {
		return nil, err
	}
	r := resp.(*pb.TxnResponse)
	k.a.fillHeader(&r.Header) // inner responses carry only their revision, as etcd's do
	return r, nil
}

func (k *kvServer) Compact(ctx context.Context, req *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	resp, err := k.a.s.ProposeCompaction(ctx, req, req.Physical)
	if err != nil {
		return nil, toGRPC(err)
	}
	k.a.fillHeader(&resp.Header)
	return resp, nil
}
