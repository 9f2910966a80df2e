package grpcproxy

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/internal/grpcproxy/namespace"
)

// namespacer applies --namespace to the messages of the forwarded calls;
// with no namespace it changes nothing.
type namespacer struct {
	prefix namespace.Prefix
}

func (n namespacer) on() bool { return len(n.prefix) > 0 }

// request adds the prefix to the keys of a request, refusing an empty key
// as etcd does (with the prefix it would no longer be empty).
func (n namespacer) request(method string, msg any) error {
	if !n.on() {
		return nil
	}
	switch r := msg.(type) {
	case *pb.RangeRequest:
		if len(r.Key) == 0 {
			return rpctypes.ErrGRPCEmptyKey
		}
		n.prefix.RangeRequest(r)
	case *pb.PutRequest:
		if len(r.Key) == 0 {
			return rpctypes.ErrGRPCEmptyKey
		}
		n.prefix.PutRequest(r)
	case *pb.DeleteRangeRequest:
		if len(r.Key) == 0 {
			return rpctypes.ErrGRPCEmptyKey
		}
		n.prefix.DeleteRangeRequest(r)
	case *pb.TxnRequest:
		if hasEmptyKey(r) {
			return rpctypes.ErrGRPCEmptyKey
		}
		n.prefix.TxnRequest(r)
	case *frame:
		if namespace.HasWireRule(method) {
			out, err := n.prefix.WireRequest(method, *r)
			if err != nil {
				return status.Error(codes.InvalidArgument, err.Error())
			}
			*r = out
		}
	}
	return nil
}

// response strips the prefix from the keys of a response.
func (n namespacer) response(method string, msg any) error {
	if !n.on() {
		return nil
	}
	switch r := msg.(type) {
	case *pb.RangeResponse:
		n.prefix.RangeResponse(r)
	case *pb.RangeStreamResponse:
		if r.RangeResponse != nil {
			n.prefix.RangeResponse(r.RangeResponse)
		}
	case *pb.PutResponse:
		n.prefix.PutResponse(r)
	case *pb.DeleteRangeResponse:
		n.prefix.DeleteRangeResponse(r)
	case *pb.TxnResponse:
		n.prefix.TxnResponse(r)
	case *pb.LeaseTimeToLiveResponse:
		n.prefix.LeaseTimeToLiveResponse(r)
	case *frame:
		if namespace.HasWireRule(method) {
			out, err := n.prefix.WireResponse(method, *r)
			if err != nil {
				return status.Error(codes.Internal, err.Error())
			}
			*r = out
		}
	}
	return nil
}

// hasEmptyKey says whether a compare or an operation of a transaction,
// nested ones included, names the empty key.
func hasEmptyKey(r *pb.TxnRequest) bool {
	for _, c := range r.Compare {
		if len(c.Key) == 0 {
			return true
		}
	}
	for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
		for _, op := range ops {
			switch o := op.Request.(type) {
			case *pb.RequestOp_RequestRange:
				if len(o.RequestRange.Key) == 0 {
					return true
				}
			case *pb.RequestOp_RequestPut:
				if len(o.RequestPut.Key) == 0 {
					return true
				}
			case *pb.RequestOp_RequestDeleteRange:
				if len(o.RequestDeleteRange.Key) == 0 {
					return true
				}
			case *pb.RequestOp_RequestTxn:
				if hasEmptyKey(o.RequestTxn) {
					return true
				}
			}
		}
	}
	return false
}
