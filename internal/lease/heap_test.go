package lease

import (
	"math/rand/v2"
	"testing"
)

// checkHeap verifies the heap order and every lease's recorded position.
func checkHeap(t *testing.T, h *leaseHeap) {
	t.Helper()
	for i, e := range h.items {
		if e.l.index[h.slot] != i {
			t.Fatalf("lease at %d records position %d", i, e.l.index[h.slot])
		}
		if other := 1 - h.slot; e.l.index[other] != -1 {
			t.Fatalf("lease at %d has a position %d in the other heap", i, e.l.index[other])
		}
		if i > 0 && h.items[(i-1)/2].at > e.at {
			t.Fatalf("entry %d (key %d) is above its parent's key %d", i, e.at, h.items[(i-1)/2].at)
		}
	}
}

// The heap, after random sets and removes, keeps its order and positions,
// and drains in key order.
func TestLeaseHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := &leaseHeap{slot: checkpointSlot}
	ls := make([]*lease, 200)
	for i := range ls {
		ls[i] = newLease(int64(i+1), 10, 0)
	}
	in := make(map[*lease]bool)
	for range 5000 {
		l := ls[rng.IntN(len(ls))]
		if rng.IntN(4) == 0 {
			h.remove(l)
			delete(in, l)
		} else {
			h.set(l, int64(rng.IntN(1000))-500)
			in[l] = true
		}
		if h.Len() != len(in) {
			t.Fatalf("heap holds %d, want %d", h.Len(), len(in))
		}
	}
	checkHeap(t, h)
	last := int64(-1 << 63)
	for h.Len() > 0 {
		l, at := h.peek()
		if at < last {
			t.Fatalf("key %d after %d", at, last)
		}
		last = at
		h.remove(l)
		if l.index[checkpointSlot] != -1 {
			t.Fatal("removed lease keeps a position")
		}
		checkHeap(t, h)
	}
	if l, _ := h.peek(); l != nil {
		t.Fatal("peek of an empty heap returned a lease")
	}
}

func TestLeaseHeapRebuildAndClear(t *testing.T) {
	h := &leaseHeap{slot: expirySlot}
	var entries []heapEntry
	var ls []*lease
	for i := 100; i > 0; i-- {
		l := newLease(int64(i), 10, 0)
		ls = append(ls, l)
		entries = append(entries, heapEntry{at: int64(i % 37), l: l})
	}
	h.rebuild(entries)
	checkHeap(t, h)
	if _, at := h.peek(); at != 0 {
		t.Fatalf("smallest key %d after rebuild, want 0", at)
	}
	h.clear()
	for _, l := range ls {
		if l.index[expirySlot] != -1 {
			t.Fatal("cleared heap left a position")
		}
	}
	if h.Len() != 0 {
		t.Fatal("cleared heap not empty")
	}
}
