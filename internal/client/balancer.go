package client

import (
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

	mu sync.Mutex // serialises setEndpoints and close
}

func newBalancer(cfg Config) (*balancer, error) {
	b := &balancer{cfg: cfg}
	empty := []*endpoint{}
	b.endpoints.Store(&empty)
	if err := b.setEndpoints(cfg.Endpoints); err != nil {
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

// pick returns the next available endpoint in round-robin order, preferring
// one other than avoid (the endpoint that just failed). When none is
// available, it still returns one, so that a cluster that is entirely
// unhealthy is retried rather than given up on.
func (b *balancer) pick(avoid *endpoint) (*endpoint, error) {
	eps := b.list()
	n := uint64(len(eps))
	if n == 0 {
		return nil, ErrClientClosed
	}
	start := b.next.Add(1)
	now := time.Now()
	var fallback *endpoint
	for i := range n {
		e := eps[(start+i)%n]
		if e == avoid && n > 1 {
			continue
		}
		if e.available(now) {
			return e, nil
		}
		if fallback == nil {
			fallback = e
		}
	}
	if fallback == nil {
		fallback = eps[start%n]
	}
	return fallback, nil
}

// setEndpoints replaces the endpoint list, keeping the connections of the
// endpoints that remain.
func (b *balancer) setEndpoints(addrs []string) error {
	if len(addrs) == 0 {
		return errNoEndpoints
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.list()
	next := make([]*endpoint, 0, len(addrs))
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
			for _, fresh := range next {
				if !slices.Contains(old, fresh) {
					fresh.close()
				}
			}
			return err
		}
		next = append(next, e)
	}
	b.endpoints.Store(&next)
	for _, e := range old {
		if !slices.Contains(next, e) {
			e.close()
		}
	}
	return nil
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
