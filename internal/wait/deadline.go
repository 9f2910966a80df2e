package wait

import (
	"sync"
	"time"
)

// Deadlines hands out channels that are closed once a duration has passed,
// rounded up to a granule: the requests that start within one granule
// share one channel and one timer. (A context.WithTimeout for each request
// is a context, a timer and a channel each, some 6% of what a member
// allocates per put.) It is safe for concurrent use.
type Deadlines struct {
	granule time.Duration
	start   time.Time // the origin of the granules, on the monotonic clock
	mu      sync.Mutex
	pending map[int64]chan struct{} // by granule number
}

// NewDeadlines rounds every deadline up to a multiple of granule.
func NewDeadlines(granule time.Duration) *Deadlines {
	return &Deadlines{granule: granule, start: time.Now(), pending: map[int64]chan struct{}{}}
}

// After returns a channel closed at least d from now, and at most d and a
// granule.
func (x *Deadlines) After(d time.Duration) <-chan struct{} {
	n := int64((time.Since(x.start) + d + x.granule - 1) / x.granule)
	x.mu.Lock()
	defer x.mu.Unlock()
	ch, ok := x.pending[n]
	if !ok {
		ch = make(chan struct{})
		x.pending[n] = ch
		time.AfterFunc(time.Until(x.start.Add(time.Duration(n)*x.granule)), func() {
			x.mu.Lock()
			delete(x.pending, n)
			x.mu.Unlock()
			close(ch)
		})
	}
	return ch
}
