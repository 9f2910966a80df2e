package client

import (
	"context"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/codes"
)

// startReadyTimeout bounds how long the first requests of a new client wait
// for the first probe round to find a healthy endpoint (DialTimeout, if
// shorter, bounds it too).
const startReadyTimeout = time.Second

// stallProbeDelay is how long a request may go unanswered before its
// endpoint is probed (and again at this interval while it stays
// unanswered): a member cut off from its peers may hold requests until
// they time out instead of failing them.
const stallProbeDelay = 300 * time.Millisecond

// health runs the health probes: a first round at once when the client
// starts, then one every HealthProbeInterval, and single probes of an
// endpoint that holds a request for long or that was just added.
type health struct {
	cfg      Config
	balancer *balancer
	ctx      context.Context // done when the client closes

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup // single probes in flight
}

// run probes every endpoint at once, then at each interval, until the
// client closes. The first round releases the balancer's waiting picks as
// soon as one endpoint is found healthy, or when it is over, or after
// startReadyTimeout.
func (h *health) run() {
	ready := time.AfterFunc(min(startReadyTimeout, h.cfg.DialTimeout), h.balancer.markReady)
	h.round(h.balancer.markReady)
	ready.Stop()
	h.balancer.markReady()
	every(h.ctx, h.cfg.HealthProbeInterval, func() { h.round(nil) })
}

// round probes every endpoint concurrently; onHealthy is called for each
// healthy verdict.
func (h *health) round(onHealthy func()) {
	var wg sync.WaitGroup
	for _, e := range h.balancer.list() {
		wg.Go(func() {
			if healthy, probed := h.probe(e); healthy && probed && onHealthy != nil {
				onHealthy()
			}
		})
	}
	wg.Wait()
}

// probeAsync probes e in the background, unless a probe of e is already in
// flight, then calls then (if not nil).
func (h *health) probeAsync(e *endpoint, then func()) {
	if e.probing.Load() {
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		if _, probed := h.probe(e); probed && then != nil {
			then()
		}
	}()
}

// close waits for the single probes in flight; the client's context must
// be done already.
func (h *health) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.wg.Wait()
}

// probe asks one member for its status, which it answers from its own state
// without consulting the others, and records the verdict: healthy when it
// knows a leader and is not a learner. probed is false when a probe of e
// was already in flight or the client closed meanwhile.
func (h *health) probe(e *endpoint) (healthy, probed bool) {
	if !e.probing.CompareAndSwap(false, true) {
		return false, false
	}
	defer e.probing.Store(false)
	probeCtx, cancel := context.WithTimeout(h.ctx, h.cfg.HealthProbeInterval)
	defer cancel()
	resp, err := pb.NewMaintenanceClient(e.conn).Status(probeCtx, &pb.StatusRequest{})
	if h.ctx.Err() != nil {
		return false, false
	}
	switch {
	case err == nil:
		healthy = resp.GetLeader() != 0 && !resp.GetIsLearner()
	default:
		// A member that answers with an error of its own (say, a
		// permission error) is reachable; only an unreachable or silent one
		// is unhealthy.
		healthy = !isEndpointFailure(err) && errorCode(err) != codes.DeadlineExceeded
	}
	if old := e.health.Load(); (old == healthGood) != healthy {
		h.cfg.Logger.Debug("endpoint health changed", "endpoint", e.addr, "healthy", healthy,
			"error", err, "leader", resp.GetLeader(), "learner", resp.GetIsLearner())
	}
	e.setProbeResult(healthy)
	return healthy, true
}

// every calls f at each interval until ctx is done.
func every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
