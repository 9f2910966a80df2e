package grpcproxy

import (
	"context"
	"sync"
	"sync/atomic"
)

// sendQueue holds the responses waiting for a client's watch stream, in
// order. Its room grows with the stream's watchers: each response of a
// shared watch is one message per watcher, all queued at once.
type sendQueue struct {
	watchers atomic.Int64 // of the stream

	mu    sync.Mutex
	items []*frame
	wake  chan struct{} // a token when items were added
	space chan struct{} // closed, and replaced, when items are taken
}

// Room of a stream's queue: a base, and as many per watcher.
const (
	queueBase       = 256
	queuePerWatcher = 16
)

func newSendQueue() *sendQueue {
	return &sendQueue{wake: make(chan struct{}, 1), space: make(chan struct{})}
}

func (q *sendQueue) room() int {
	return queueBase + queuePerWatcher*int(q.watchers.Load())
}

// offer queues f unless the queue is full.
func (q *sendQueue) offer(f *frame) bool {
	q.mu.Lock()
	if len(q.items) >= q.room() {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, f)
	q.mu.Unlock()
	q.notify()
	return true
}

// put queues f, waiting for room until ctx ends.
func (q *sendQueue) put(ctx context.Context, f *frame) error {
	for {
		q.mu.Lock()
		if len(q.items) < q.room() {
			q.items = append(q.items, f)
			q.mu.Unlock()
			q.notify()
			return nil
		}
		space := q.space
		q.mu.Unlock()
		select {
		case <-space:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (q *sendQueue) notify() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take waits for responses until ctx ends, and takes all of them.
func (q *sendQueue) take(ctx context.Context) ([]*frame, error) {
	for {
		q.mu.Lock()
		if items := q.items; len(items) > 0 {
			q.items = nil
			close(q.space)
			q.space = make(chan struct{})
			q.mu.Unlock()
			return items, nil
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
