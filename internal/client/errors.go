package client

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// toError turns the error of a call made with ctx into what callers expect:
// the context's own error when the call ended because ctx did, an
// rpctypes.EtcdError (comparable with the rpctypes.Err* values) for the
// errors etcd defines, and the gRPC error otherwise.
func toError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.DeadlineExceeded, codes.Canceled:
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	return rpctypes.Error(err)
}

// errorCode is the gRPC code of err, whether a gRPC status error or an
// rpctypes.EtcdError; codes.Unknown for other errors.
func errorCode(err error) codes.Code {
	var etcdErr rpctypes.EtcdError
	if errors.As(err, &etcdErr) {
		return etcdErr.Code()
	}
	return status.Code(err)
}

// errorDesc is the server's message in err, or err's text.
func errorDesc(err error) string {
	var etcdErr rpctypes.EtcdError
	if errors.As(err, &etcdErr) {
		return etcdErr.Error()
	}
	return rpctypes.ErrorDesc(err)
}
