package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
)

// failureQuarantine is how long an endpoint whose connection just failed is
// skipped by the balancer, unless the health probe vouches for it earlier;
// also how long one that let a request hang until its caller gave up is
// skipped (whatever the probe says: a member cut off from its peers still
// believes in its leader for up to an election timeout).
const failureQuarantine = 3 * time.Second

// errEndpointUnhealthy is the cause given to the streams of an endpoint that
// the health probe takes out of rotation, so that they move elsewhere.
var errEndpointUnhealthy = errors.New("endpoint taken out of rotation by the health probe")

// Health verdicts of an endpoint. An endpoint is unknown until its first
// probe answers; the balancer prefers healthy endpoints to unknown ones and
// uses unhealthy ones only when nothing else is left.
const (
	healthUnknown int32 = iota
	healthGood
	healthBad
)

// endpoint is one member's client URL with its own gRPC connection.
type endpoint struct {
	addr string
	conn *grpc.ClientConn

	// health is the last verdict of the health probe (healthUnknown until
	// probed), or healthBad after the member said it has no leader.
	health atomic.Int32
	// probing is set while a probe of this endpoint is in flight, so that
	// probes triggered by stalled requests do not pile up.
	probing atomic.Bool
	// failedAt is the time (unix nanoseconds) of the last transport failure
	// seen on this endpoint, or 0.
	failedAt atomic.Int64
	// stalledAt is the time (unix nanoseconds) a request last hung here
	// until its caller gave up, or 0.
	stalledAt atomic.Int64

	mu         sync.Mutex
	streams    map[uint64]context.CancelCauseFunc
	nextStream uint64
}

// parseEndpoint turns an etcd-style endpoint into a gRPC target and says
// whether it asks for TLS (true), for plaintext (false) or leaves it to the
// configuration (explicit false).
func parseEndpoint(addr string) (target string, secure, explicit bool, err error) {
	scheme, rest, found := strings.Cut(addr, "://")
	if !found {
		if path, ok := strings.CutPrefix(addr, "unix:"); ok {
			return "unix:" + path, false, false, nil
		}
		return "passthrough:///" + addr, false, false, nil
	}
	switch scheme {
	case "http":
		return "passthrough:///" + rest, false, true, nil
	case "https":
		return "passthrough:///" + rest, true, true, nil
	case "unix":
		return "unix:" + rest, false, true, nil
	case "unixs":
		return "unix:" + rest, true, true, nil
	}
	return "", false, false, fmt.Errorf("endpoint %q: unsupported scheme %q", addr, scheme)
}

// dialEndpoint starts connecting to addr in the background.
func dialEndpoint(addr string, cfg Config) (*endpoint, error) {
	target, secure, explicit, err := parseEndpoint(addr)
	if err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	if secure || (!explicit && cfg.TLS != nil) {
		tlsCfg := cfg.TLS
		if tlsCfg == nil {
			tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		creds = credentials.NewTLS(tlsCfg.Clone())
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(creds),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time:                cfg.KeepAliveTime,
			Timeout:             cfg.KeepAliveTimeout,
			PermitWithoutStream: true,
		}),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  100 * time.Millisecond,
				Multiplier: 1.6,
				Jitter:     0.2,
				MaxDelay:   2 * time.Second,
			},
			MinConnectTimeout: cfg.DialTimeout,
		}),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallSendMsgSize(cfg.MaxCallSendMsgSize),
			grpc.MaxCallRecvMsgSize(cfg.MaxCallRecvMsgSize),
		),
	)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", addr, err)
	}
	conn.Connect()
	e := &endpoint{addr: addr, conn: conn, streams: map[uint64]context.CancelCauseFunc{}}
	return e, nil
}

// available says whether the balancer may send new requests here.
func (e *endpoint) available(now time.Time) bool {
	return e.health.Load() != healthBad && !quarantined(e.failedAt.Load(), now) && !quarantined(e.stalledAt.Load(), now)
}

func quarantined(since int64, now time.Time) bool {
	return since != 0 && now.Sub(time.Unix(0, since)) <= failureQuarantine
}

// markFailed records a transport failure: the endpoint is skipped for a while.
func (e *endpoint) markFailed() {
	e.failedAt.Store(time.Now().UnixNano())
}

// markStalled records that a request hung here until its caller gave up:
// the endpoint is skipped for a while, even if the probe vouches for it.
func (e *endpoint) markStalled() {
	e.stalledAt.Store(time.Now().UnixNano())
}

// setProbeResult records the health probe's verdict. Taking an endpoint out
// of rotation cancels its streams so that their owners resume elsewhere.
func (e *endpoint) setProbeResult(ok bool) {
	verdict := healthBad
	if ok {
		e.failedAt.Store(0)
		verdict = healthGood
	}
	if e.health.Swap(verdict) == verdict || ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, cancel := range e.streams {
		cancel(errEndpointUnhealthy)
	}
}

// trackStream derives a context for a stream on this endpoint that is
// cancelled when the endpoint is taken out of rotation.
func (e *endpoint) trackStream(ctx context.Context) (context.Context, context.CancelFunc) {
	streamCtx, cancel := context.WithCancelCause(ctx)
	e.mu.Lock()
	id := e.nextStream
	e.nextStream++
	e.streams[id] = cancel
	e.mu.Unlock()
	context.AfterFunc(streamCtx, func() {
		e.mu.Lock()
		delete(e.streams, id)
		e.mu.Unlock()
	})
	return streamCtx, func() { cancel(context.Canceled) }
}

func (e *endpoint) close() error {
	return e.conn.Close()
}
