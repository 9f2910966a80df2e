package client

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
)

// errEndpointStalled is the cause given to a read abandoned on a member
// that held it while the probe found that member without a leader.
var errEndpointStalled = errors.New("endpoint held the request and has no leader")

// router is the grpc.ClientConnInterface behind the service clients: it
// sends each call to an endpoint chosen by the balancer (or always to one
// endpoint), adds the auth token, and retries what is safe to retry.
type router struct {
	balancer *balancer
	health   *health // nil when the health probe is disabled
	auth     *authenticator
	fixed    *endpoint // when set, every call goes there
	log      *slog.Logger
}

var _ grpc.ClientConnInterface = (*router)(nil)

func (r *router) pick(ctx context.Context, avoid *endpoint) (*endpoint, error) {
	if r.fixed != nil {
		return r.fixed, nil
	}
	return r.balancer.pick(ctx, avoid)
}

// markNoLeader records that the member at e said it has no leader: it is
// taken out of rotation (its streams move elsewhere) until the probe finds
// it has one again, or, without a probe, skipped for a while.
func (r *router) markNoLeader(e *endpoint) {
	e.markFailed()
	if r.health != nil {
		e.setProbeResult(false)
	}
}

// Invoke sends a unary call, failing over to another endpoint and retrying
// with backoff while the failure allows it and ctx is not done. A call that
// needs a leader asks the member to fail it at once when it has none
// (etcd's require-leader metadata), so that it can go elsewhere; a read
// held by a member that the probe then finds without a leader is sent
// elsewhere too.
func (r *router) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	requireLeader := r.fixed == nil && needsLeader(method, args)
	readOnly := isReadOnly(method, args)
	var failed *endpoint
	renewed := false
	for attempt := 0; ; {
		ep, err := r.pick(ctx, failed)
		if err != nil {
			return err
		}
		callCtx, token, err := r.auth.outgoingContext(ctx, method, requireLeader)
		if err != nil {
			return err
		}
		// A read held by a member found without a leader is abandoned
		// there; a write never is (its outcome would be unknown).
		attemptCtx, cancelAttempt := callCtx, context.CancelCauseFunc(nil)
		var abandon func()
		if readOnly && r.watchesStalls() {
			attemptCtx, cancelAttempt = context.WithCancelCause(callCtx)
			abandon = func() { cancelAttempt(errEndpointStalled) }
		}
		stall := r.watchStall(ep, abandon)
		var p peer.Peer
		began := time.Now()
		var budget time.Duration
		if deadline, ok := ctx.Deadline(); ok {
			budget = deadline.Sub(began)
		}
		err = ep.conn.Invoke(attemptCtx, method, args, reply, append(opts, grpc.Peer(&p))...)
		stalled := stall.stop()
		abandoned := false
		if cancelAttempt != nil {
			abandoned = errors.Is(context.Cause(attemptCtx), errEndpointStalled)
			cancelAttempt(nil)
		}
		if err == nil {
			return nil
		}
		if abandoned && ctx.Err() == nil {
			r.log.Debug("moving a held read off a member without leader", "method", method, "endpoint", ep.addr)
			failed = ep
			attempt++
			continue
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
		noLeader := isNoLeader(err)
		switch {
		case noLeader:
			r.markNoLeader(ep)
		case isEndpointFailure(err):
			ep.markFailed()
		case stalled && (ctx.Err() != nil || errorCode(err) == codes.DeadlineExceeded):
			// The member held the call until its caller gave up (the
			// member itself may end it first, at the deadline it was
			// given): it may have just been cut off from its peers and not
			// know it yet.
			ep.markStalled()
		}
		retryable := isRetryable(method, args, err, p.Addr != nil) || (noLeader && provesNotExecuted(err, time.Since(began), budget))
		if ctx.Err() != nil || !retryable {
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

// stallWatch probes the endpoint of a call that goes unanswered for
// stallProbeDelay, and again at that interval until the call ends, so that
// a member that holds requests because it has lost its leader is taken out
// of rotation without waiting for the periodic probe.
type stallWatch struct {
	mu      sync.Mutex
	timer   *time.Timer
	done    bool
	stalled bool
}

// watchStall starts watching a call on ep; onBad, when not nil, is called
// if ep is found unhealthy while the call is unanswered. There is nothing
// to watch when the call has nowhere else to go.
func (r *router) watchStall(ep *endpoint, onBad func()) *stallWatch {
	if !r.watchesStalls() {
		return nil
	}
	w := &stallWatch{}
	check := func() {
		if ep.health.Load() == healthBad && onBad != nil {
			onBad()
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = time.AfterFunc(stallProbeDelay, func() {
		w.mu.Lock()
		if w.done {
			w.mu.Unlock()
			return
		}
		w.stalled = true
		w.timer.Reset(stallProbeDelay)
		w.mu.Unlock()
		check()
		r.health.probeAsync(ep, check)
	})
	return w
}

// watchesStalls says whether calls are watched for stalls: there is a
// probe, and another endpoint to go to.
func (r *router) watchesStalls() bool {
	return r.health != nil && r.fixed == nil && len(r.balancer.list()) > 1
}

// stop ends the watch and says whether the call was unanswered for at
// least stallProbeDelay.
func (w *stallWatch) stop() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	w.timer.Stop()
	return w.stalled
}

// NewStream opens a stream on an endpoint chosen by the balancer, trying
// others while none accepts it. The stream is cancelled if its endpoint is
// taken out of rotation; its owner then opens a new one.
func (r *router) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	var failed *endpoint
	for attempt := 0; ; attempt++ {
		ep, err := r.pick(ctx, failed)
		if err != nil {
			return nil, err
		}
		callCtx, token, err := r.auth.outgoingContext(ctx, method, false)
		if err != nil {
			return nil, err
		}
		streamCtx, cancel := ep.trackStream(callCtx)
		s, err := ep.conn.NewStream(streamCtx, desc, method, opts...)
		if err == nil {
			r.log.Debug("stream opened", "method", method, "endpoint", ep.addr)
			return &endpointStream{ClientStream: s, ctx: ctx, cancel: cancel, auth: r.auth, token: token, router: r, ep: ep}, nil
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
// registration with the endpoint, takes the endpoint out of rotation if it
// failed or has no leader, and renews the token if the server rejected it,
// so that its owner can simply open a new stream.
type endpointStream struct {
	grpc.ClientStream
	ctx    context.Context // the owner's context
	cancel context.CancelFunc
	auth   *authenticator
	token  string
	router *router
	ep     *endpoint
}

// RecvMsg receives the next message; see endpointStream.
func (s *endpointStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.cancel()
		switch {
		case isNoLeader(err):
			s.router.markNoLeader(s.ep)
		case isEndpointFailure(err) && s.ctx.Err() == nil:
			s.ep.markFailed()
		}
		if isRejectedToken(err) {
			_, _ = s.auth.renew(s.ctx, s.token) // a failure shows again on the next stream
		}
		return err
	}
	if w, ok := m.(*pb.WatchResponse); ok && w.GetCanceled() && w.GetCancelReason() == rpctypes.ErrorDesc(rpctypes.ErrGRPCNoLeader) {
		s.router.markNoLeader(s.ep)
	}
	return nil
}
