package api

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// etcd 3.7.3's gRPC refuses a unary request that does not decode with
// "grpc: error unmarshalling request: ..." where ours says "grpc: failed
// to unmarshal the received message: ..." (as both do for a stream's
// message, which is left so). gRPC sends its error as soon as the codec
// fails, so a unary request is decoded through a unaryRequest, which the
// codec fills without failing (codec.Unmarshal), and its error is sent
// with etcd's text.

// unaryRequest is a unary request being decoded, and the error of it.
type unaryRequest struct {
	msg any
	err error
}

// registerService registers a service whose unary methods refuse a request
// that does not decode with etcd's text.
func registerService(s *grpc.Server, desc *grpc.ServiceDesc, impl any) {
	d := *desc
	d.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		h := m.Handler
		m.Handler = func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
			return h(srv, ctx, func(msg any) error {
				u := &unaryRequest{msg: msg}
				if err := dec(u); err != nil {
					return err
				}
				if u.err != nil {
					return status.Errorf(codes.Internal, "grpc: error unmarshalling request: %v", u.err)
				}
				return nil
			}, in)
		}
		d.Methods[i] = m
	}
	s.RegisterService(&d, impl)
}
