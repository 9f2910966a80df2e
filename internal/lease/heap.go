package lease

// heapEntry is a lease and its key in one heap: nanoseconds since the
// lessor's epoch. The key sits in the heap's own array, so that comparisons
// walk contiguous memory rather than chase lease pointers.
type heapEntry struct {
	at int64
	l  *lease
}

// leaseHeap is a min-heap of leases by key, for one slot (expiry or
// checkpoint). Each lease records its position in the slot, so a lease's
// key can be changed or the lease removed in O(log n).
type leaseHeap struct {
	slot  int
	items []heapEntry
}

// Len returns the number of leases in the heap.
func (h *leaseHeap) Len() int { return len(h.items) }

// set gives l the key at, adding l if it is not in the heap.
func (h *leaseHeap) set(l *lease, at int64) {
	i := l.index[h.slot]
	if i < 0 {
		i = len(h.items)
		h.items = append(h.items, heapEntry{at: at, l: l})
		l.index[h.slot] = i
		h.up(i)
		return
	}
	old := h.items[i].at
	h.items[i].at = at
	if at < old {
		h.up(i)
	} else {
		h.down(i)
	}
}

// remove takes l out of the heap if it is in it.
func (h *leaseHeap) remove(l *lease) {
	i := l.index[h.slot]
	if i < 0 {
		return
	}
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = heapEntry{}
	h.items = h.items[:last]
	l.index[h.slot] = -1
	if i < last && !h.down(i) {
		h.up(i)
	}
}

// peek returns the lease with the smallest key and the key; nil if the heap
// is empty.
func (h *leaseHeap) peek() (*lease, int64) {
	if len(h.items) == 0 {
		return nil, 0
	}
	return h.items[0].l, h.items[0].at
}

// clear empties the heap.
func (h *leaseHeap) clear() {
	for _, e := range h.items {
		e.l.index[h.slot] = -1
	}
	clear(h.items)
	h.items = h.items[:0]
}

// rebuild makes the heap hold exactly entries (taking the slice), in O(n).
func (h *leaseHeap) rebuild(entries []heapEntry) {
	h.clear()
	h.items = entries
	for i, e := range entries {
		e.l.index[h.slot] = i
	}
	for i := len(entries)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *leaseHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].l.index[h.slot] = i
	h.items[j].l.index[h.slot] = j
}

// up moves entry i towards the root until its parent's key is not larger.
func (h *leaseHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h.items[p].at <= h.items[i].at {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down moves entry i towards the leaves until no child's key is smaller,
// and reports whether it moved.
func (h *leaseHeap) down(i int) bool {
	start, n := i, len(h.items)
	for {
		c := 2*i + 1
		if c >= n || c < 0 { // c < 0: overflow
			break
		}
		if r := c + 1; r < n && h.items[r].at < h.items[c].at {
			c = r
		}
		if h.items[i].at <= h.items[c].at {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}
