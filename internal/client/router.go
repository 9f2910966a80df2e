package client

import (
	"context"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
)

// router is the grpc.ClientConnInterface behind the service clients: it
// sends each call to an endpoint chosen by the balancer (or always to one
// endpoint), adds the auth token, and retries what is safe to retry.
type router struct {
	balancer *balancer
	auth     *authenticator
	fixed    *endpoint // when set, every call goes there
	log      *slog.Logger
}

var _ grpc.ClientConnInterface = (*router)(nil)

func (r *router) pick(avoid *endpoint) (*endpoint, error) {
	if r.fixed != nil {
		return r.fixed, nil
	}
	return r.balancer.pick(avoid)
}

// Invoke sends a unary call, failing over to another endpoint and retrying
// with backoff while the failure allows it and ctx is not done.
func (r *router) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	var failed *endpoint
	renewed := false
	for attempt := 0; ; {
		ep, err := r.pick(failed)
		if err != nil {
			return err
		}
		callCtx, token, err := r.auth.outgoingContext(ctx, method)
		if err != nil {
			return err
		}
		var p peer.Peer
		err = ep.conn.Invoke(callCtx, method, args, reply, append(opts, grpc.Peer(&p))...)
		if err == nil {
			return nil
		}
		if isRejectedToken(err) && !renewed {
			renewed = true
			retry, renewErr := r.auth.renew(ctx, token)
			if renewErr != nil {
				return renewErr
			}
			if retry {
				continue
			}
		}
		if isEndpointFailure(err) {
			ep.markFailed()
		}
		if ctx.Err() != nil || !isRetryable(method, args, err, p.Addr != nil) {
			return toError(ctx, err)
		}
		r.log.Debug("retrying call", "method", method, "endpoint", ep.addr, "attempt", attempt, "error", err)
		if err := sleep(ctx, retryDelay(attempt)); err != nil {
			return err
		}
		failed = ep
		attempt++
	}
}

// NewStream opens a stream on an endpoint chosen by the balancer, trying
// others while none accepts it. The stream is cancelled if its endpoint is
// taken out of rotation; its owner then opens a new one.
func (r *router) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	var failed *endpoint
	for attempt := 0; ; attempt++ {
		ep, err := r.pick(failed)
		if err != nil {
			return nil, err
		}
		callCtx, token, err := r.auth.outgoingContext(ctx, method)
		if err != nil {
			return nil, err
		}
		streamCtx, cancel := ep.trackStream(callCtx)
		s, err := ep.conn.NewStream(streamCtx, desc, method, opts...)
		if err == nil {
			r.log.Debug("stream opened", "method", method, "endpoint", ep.addr)
			return &endpointStream{ClientStream: s, ctx: ctx, cancel: cancel, auth: r.auth, token: token}, nil
		}
		cancel()
		if isEndpointFailure(err) {
			ep.markFailed()
		}
		if ctx.Err() != nil || !isRetryable(method, nil, err, false) {
			return nil, toError(ctx, err)
		}
		if err := sleep(ctx, retryDelay(attempt)); err != nil {
			return nil, err
		}
		failed = ep
	}
}

// endpointStream is a stream on one endpoint. When it ends it releases its
// registration with the endpoint, and renews the token if the server
// rejected it, so that its owner can simply open a new stream.
type endpointStream struct {
	grpc.ClientStream
	ctx    context.Context // the owner's context
	cancel context.CancelFunc
	auth   *authenticator
	token  string
}

// RecvMsg receives the next message; see endpointStream.
func (s *endpointStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.cancel()
		if isRejectedToken(err) {
			_, _ = s.auth.renew(s.ctx, s.token) // a failure shows again on the next stream
		}
	}
	return err
}
