// Package wait hands results to the goroutines that wait for them: a List
// by ID (a proposal's result, once it is applied), an Index by position
// (once the applied index reaches it). It holds no goroutine and imports
// nothing of the module.
package wait

import "sync"

// List hands each registered ID's result (of type R) to the goroutine
// that registered it, with a value of type V kept for the one who
// triggers it. It is safe for concurrent use.
type List[V, R any] struct {
	mu sync.Mutex
	m  map[uint64]waiter[V, R]
}

type waiter[V, R any] struct {
	ch    chan R
	value V
}

// NewList returns an empty list.
func NewList[V, R any]() *List[V, R] { return &List[V, R]{m: map[uint64]waiter[V, R]{}} }

// Register waits for id's result, keeping v with it; the channel receives
// the result once, unless the wait is cancelled.
func (l *List[V, R]) Register(id uint64, v V) <-chan R {
	ch := make(chan R, 1)
	l.mu.Lock()
	l.m[id] = waiter[V, R]{ch: ch, value: v}
	l.mu.Unlock()
	return ch
}

// Value returns the value registered with id, if it is still waited for.
func (l *List[V, R]) Value(id uint64) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.m[id]
	return w.value, ok
}

// Len counts the IDs waited for.
func (l *List[V, R]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// Cancel stops waiting for id.
func (l *List[V, R]) Cancel(id uint64) {
	l.mu.Lock()
	delete(l.m, id)
	l.mu.Unlock()
}

// Trigger hands r to the goroutine waiting for id, if there is one.
func (l *List[V, R]) Trigger(id uint64, r R) {
	l.mu.Lock()
	w, ok := l.m[id]
	delete(l.m, id)
	l.mu.Unlock()
	if ok {
		w.ch <- r
	}
}

// Index wakes goroutines once an index (the applied index) reaches a
// value. It is safe for concurrent use.
type Index struct {
	mu      sync.Mutex
	index   uint64
	waiting map[uint64][]chan struct{}
}

// NewIndex starts at index 0.
func NewIndex() *Index { return &Index{waiting: map[uint64][]chan struct{}{}} }

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Wait returns a channel closed once the index has reached index.
func (x *Index) Wait(index uint64) <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	if index <= x.index {
		return closedChan
	}
	ch := make(chan struct{})
	x.waiting[index] = append(x.waiting[index], ch)
	return ch
}

// Advance moves the index to index (never back) and wakes who waited for
// it.
func (x *Index) Advance(index uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if index <= x.index {
		return
	}
	x.index = index
	for i, chs := range x.waiting {
		if i <= index {
			for _, ch := range chs {
				close(ch)
			}
			delete(x.waiting, i)
		}
	}
}

// Current returns the index.
func (x *Index) Current() uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.index
}
