package api

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
)

// errStopping is the cause of a stream's end when the member stops.
var errStopping = errors.New("the member is stopping")

// streamUntilStop ends the stream, with etcd's "server stopped" (which
// clients take as a cue to go on with another member), when the member
// stops: so that Stop need not wait for watches and keep-alives, which end
// only when their clients end them, to answer the unary calls in flight.
func (a *API) streamUntilStop(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, cancel := context.WithCancelCause(ss.Context())
	defer cancel(nil)
	unhook := context.AfterFunc(a.stopping, func() { cancel(errStopping) })
	defer unhook()
	err := handler(srv, &ctxStream{ServerStream: ss, ctx: ctx})
	if errors.Is(context.Cause(ctx), errStopping) {
		return rpctypes.ErrGRPCStopped
	}
	return err
}

// Stop stops serving: the listeners close, the gRPC connections are told
// to go away (their clients send new calls to another member), the
// streams end, and the unary calls in flight are answered (a put held
// across the hand-off of this member's leadership among them: cut, its
// client would not know whether it was applied), for at most the request
// timeout, before every connection closes.
func (a *API) Stop() {
	for _, ln := range a.lns {
		ln.Close()
	}
	graceful := make(chan struct{})
	go func() { a.grpc.GracefulStop(); close(graceful) }()
	a.endStreams()
	t := time.NewTimer(a.s.RequestTimeout())
	select {
	case <-graceful:
	case <-t.C:
		a.grpc.Stop()
		<-graceful
	}
	t.Stop()
	a.local.Close()
	a.gw.stop()
	a.http.Close()
	for _, srv := range a.metricsSrv {
		srv.Close()
	}
	a.grpcTLS.Close()
	a.wg.Wait()
}
