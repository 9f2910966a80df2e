package server

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// requestIDs generates the unique IDs of proposals: the member's low 16
// bits, then a millisecond timestamp, then a counter.
type requestIDs struct {
	next atomic.Uint64
}

func newRequestIDs(memberID uint64) *requestIDs {
	g := &requestIDs{}
	prefix := (memberID & 0xffff) << 48
	ts := uint64(time.Now().UnixMilli()&0xffffffffff) << 8
	g.next.Store(prefix | ts)
	return g
}

func (g *requestIDs) get() uint64 { return g.next.Add(1) }

// waiters hands each proposal's result to the goroutine that proposed it.
type waiters struct {
	mu sync.Mutex
	m  map[uint64]waiter
}

type waiter struct {
	ch chan applyResult
	// req and data are the request proposed and its encoding, which the
	// apply loop uses rather than decode the entry again (nil for a conf
	// change).
	req  *pb.InternalRaftRequest
	data []byte
}

func newWaiters() *waiters { return &waiters{m: map[uint64]waiter{}} }

func (w *waiters) register(id uint64, req *pb.InternalRaftRequest, data []byte) <-chan applyResult {
	ch := make(chan applyResult, 1)
	w.mu.Lock()
	w.m[id] = waiter{ch: ch, req: req, data: data}
	w.mu.Unlock()
	return ch
}

// proposal returns the request proposed here under id whose encoding is
// data, if its proposer still waits.
func (w *waiters) proposal(id uint64, data []byte) *pb.InternalRaftRequest {
	w.mu.Lock()
	wt := w.m[id]
	w.mu.Unlock()
	if wt.req == nil || !bytes.Equal(wt.data, data) {
		return nil
	}
	return wt.req
}

func (w *waiters) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}

func (w *waiters) cancel(id uint64) {
	w.mu.Lock()
	delete(w.m, id)
	w.mu.Unlock()
}

func (w *waiters) trigger(id uint64, r applyResult) {
	w.mu.Lock()
	wt, ok := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	if ok {
		wt.ch <- r
	}
}

// appliedWaiters wakes goroutines once the applied index reaches a value.
type appliedWaiters struct {
	mu      sync.Mutex
	applied uint64
	waiting map[uint64][]chan struct{}
}

func newAppliedWaiters() *appliedWaiters {
	return &appliedWaiters{waiting: map[uint64][]chan struct{}{}}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// wait returns a channel closed once index has been applied.
func (a *appliedWaiters) wait(index uint64) <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if index <= a.applied {
		return closedChan
	}
	ch := make(chan struct{})
	a.waiting[index] = append(a.waiting[index], ch)
	return ch
}

func (a *appliedWaiters) advance(index uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if index <= a.applied {
		return
	}
	a.applied = index
	for i, chs := range a.waiting {
		if i <= index {
			for _, ch := range chs {
				close(ch)
			}
			delete(a.waiting, i)
		}
	}
}
