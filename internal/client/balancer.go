package client

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

var (
	// errNoEndpoints is returned when a client is created without endpoints.
	errNoEndpoints = errors.New("no endpoints given")
	// ErrClientClosed is returned by calls made after Close.
	ErrClientClosed = errors.New("client is closed")
)

// balancer holds one connection per endpoint and spreads requests over the
// available ones in turn.
type balancer struct {
	cfg       Config
	endpoints atomic.Pointer[[]*endpoint]
	next      atomic.Uint64

	// ready, when not nil, is closed once the first round of health probes
	// has found a healthy endpoint, or has ended, or has taken too long:
	// until then picks wait, so that the first request of a new client does
	// not go to a member that has lost its leader.
	ready     chan struct{}
	readyOnce sync.Once

	mu sync.Mutex // serialises setEndpoints and close
}

func newBalancer(cfg Config) (*balancer, error) {
	b := &balancer{cfg: cfg}
	empty := []*endpoint{}
	b.endpoints.Store(&empty)
	if _, err := b.setEndpoints(cfg.Endpoints); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// list returns the current endpoints.
func (b *balancer) list() []*endpoint {
	return *b.endpoints.Load()
}

// find returns the endpoint with address addr, or nil.
func (b *balancer) find(addr string) *endpoint {
	for _, e := range b.list() {
		if e.addr == addr {
			return e
		}
	}
	return nil
}

// markReady releases the picks waiting for the first probe round.
func (b *balancer) markReady() {
	if b.ready != nil {
		b.readyOnce.Do(func() { close(b.ready) })
	}
}

// pick returns the next available endpoint in round-robin order, preferring
// one the health probe found healthy to one not probed yet, and one other
// than avoid (the endpoint that just failed). When none is available, it
// still returns one, so that a cluster that is entirely unhealthy is
// retried rather than given up on. Until the first probe round is ready, it
// waits for it (or for ctx).
func (b *balancer) pick(ctx context.Context, avoid *endpoint) (*endpoint, error) {
	if b.ready != nil {
		select {
		case <-b.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	eps := b.list()
	n := uint64(len(eps))
	if n == 0 {
		return nil, ErrClientClosed
	}
	start := b.next.Add(1)
	now := time.Now()
	var unknown, fallback *endpoint
	for i := range n {
		e := eps[(start+i)%n]
		if e == avoid && n > 1 {
			continue
		}
		switch {
		case !e.available(now):
			if fallback == nil {
				fallback = e
			}
		case e.health.Load() == healthGood:
			return e, nil
		case unknown == nil:
			unknown = e
		}
	}
	if unknown != nil {
		return unknown, nil
	}
	if fallback == nil {
		fallback = eps[start%n]
	}
	return fallback, nil
}

// setEndpoints replaces the endpoint list, keeping the connections of the
// endpoints that remain. It returns the endpoints that are new.
func (b *balancer) setEndpoints(addrs []string) ([]*endpoint, error) {
	if len(addrs) == 0 {
		return nil, errNoEndpoints
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.list()
	next := make([]*endpoint, 0, len(addrs))
	var fresh []*endpoint
	for _, addr := range addrs {
		if slices.ContainsFunc(next, func(e *endpoint) bool { return e.addr == addr }) {
			continue
		}
		if i := slices.IndexFunc(old, func(e *endpoint) bool { return e.addr == addr }); i >= 0 {
			next = append(next, old[i])
			continue
		}
		e, err := dialEndpoint(addr, b.cfg)
		if err != nil {
			for _, e := range fresh {
				e.close()
			}
			return nil, err
		}
		next = append(next, e)
		fresh = append(fresh, e)
	}
	b.endpoints.Store(&next)
	for _, e := range old {
		if !slices.Contains(next, e) {
			e.close()
		}
	}
	return fresh, nil
}

// close closes every connection.
func (b *balancer) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.list() {
		e.close()
	}
	empty := []*endpoint{}
	b.endpoints.Store(&empty)
}
