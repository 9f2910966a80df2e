package grpcproxy

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSendQueue: the queue keeps order, refuses an offer when full, makes
// put wait for room, and its room grows with the stream's watchers.
func TestSendQueue(t *testing.T) {
	q := newSendQueue()
	ctx := context.Background()
	frameOf := func(i int) *frame { f := frame{byte(i)}; return &f }
	for i := range queueBase {
		if !q.offer(frameOf(i)) {
			t.Fatalf("offer %d refused below the room of %d", i, queueBase)
		}
	}
	if q.offer(frameOf(0)) {
		t.Fatal("an offer to a full queue was taken")
	}
	q.watchers.Add(1)
	for i := range queuePerWatcher {
		if !q.offer(frameOf(i)) {
			t.Fatalf("offer %d refused with a watcher's room", i)
		}
	}

	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := q.put(short, frameOf(0)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("put to a full queue: %v, want it to wait until its context ends", err)
	}
	put := make(chan error)
	go func() { put <- q.put(ctx, frameOf(7)) }()
	batch, err := q.take(ctx)
	if err != nil || len(batch) != queueBase+queuePerWatcher {
		t.Fatalf("take: %d frames, %v", len(batch), err)
	}
	for i, f := range batch[:queueBase] {
		if (*f)[0] != byte(i) {
			t.Fatalf("frame %d is %d: out of order", i, (*f)[0])
		}
	}
	if err := <-put; err != nil {
		t.Fatal(err)
	}
	if batch, err := q.take(ctx); err != nil || len(batch) != 1 || (*batch[0])[0] != 7 {
		t.Fatalf("after the put: %v %v", batch, err)
	}
}
