// Package loadgen runs a bounded load against a server and measures it: a
// number of concurrent workers share a budget of requests (or a duration),
// optionally paced to a total rate, and every request's latency is kept for
// the report. It knows nothing of the client that sends the requests, so
// that `cairn bench` (cairn's client) and the load generator built on etcd's
// own client (scripts/) measure the same way.
package loadgen

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Request sends request number seq (0, 1, ...) and returns its outcome. A
// Request is called by one goroutine at a time.
type Request func(ctx context.Context, seq int) error

// Options shape a run.
type Options struct {
	// Workers is the number of requests in flight at once (etcd's
	// benchmark calls them clients).
	Workers int
	// Total is the number of requests to send; when zero, requests are sent
	// until Duration has passed.
	Total int
	// Duration bounds a run without a Total.
	Duration time.Duration
	// Rate, when positive, paces the requests of all workers together to
	// that many per second.
	Rate float64
	// Progress, when set, is called from time to time with the number of
	// requests done (of Total, or of the Duration elapsed in seconds).
	Progress func(done, of int)
}

// Result is what a run measured.
type Result struct {
	// Elapsed is the time from the first request sent to the last answered.
	Elapsed time.Duration
	// Latencies of the successful requests, fastest first.
	Latencies []time.Duration
	// Errors counts the failed requests by error message.
	Errors map[string]int
}

// Failed is the number of failed requests.
func (r *Result) Failed() int {
	n := 0
	for _, c := range r.Errors {
		n += c
	}
	return n
}

// gcPercent is the garbage collector's target during a run (GOGC).
const gcPercent = 400

// errNoWorkers is returned for a run without workers.
var errNoWorkers = errors.New("the number of clients must be at least 1")

// Run makes one Request per worker with newRequest (worker 0, 1, ...) and
// sends the load through them. It ends early, with what was measured so
// far, when ctx is done.
func Run(ctx context.Context, opts Options, newRequest func(worker int) (Request, error)) (*Result, error) {
	if opts.Workers < 1 {
		return nil, errNoWorkers
	}
	if opts.Total <= 0 && opts.Duration <= 0 {
		return nil, errors.New("a run needs a number of requests or a duration")
	}
	requests := make([]Request, opts.Workers)
	for i := range requests {
		r, err := newRequest(i)
		if err != nil {
			return nil, fmt.Errorf("client %d: %w", i, err)
		}
		requests[i] = r
	}
	// The generator shares the machine with what it measures: collecting
	// garbage less often (its heap is small) leaves more CPU to the server.
	defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
	run := &runState{opts: opts, start: time.Now()}
	if opts.Duration > 0 {
		run.deadline = run.start.Add(opts.Duration)
	}
	stopProgress := run.reportProgress(ctx)
	var wg sync.WaitGroup
	perWorker := make([]workerStats, opts.Workers)
	if opts.Total > 0 {
		for i := range perWorker {
			perWorker[i].latencies = make([]time.Duration, 0, opts.Total/opts.Workers+1)
		}
	}
	for i, req := range requests {
		wg.Go(func() { run.work(ctx, req, &perWorker[i]) })
	}
	wg.Wait()
	end := time.Now()
	stopProgress()

	res := &Result{Elapsed: end.Sub(run.start), Errors: map[string]int{}}
	for _, w := range perWorker {
		res.Latencies = append(res.Latencies, w.latencies...)
		for msg, n := range w.errors {
			res.Errors[msg] += n
		}
	}
	slices.Sort(res.Latencies)
	return res, nil
}

// runState is shared by the workers of a run.
type runState struct {
	opts     Options
	start    time.Time
	deadline time.Time // zero without Duration
	next     atomic.Int64
	done     atomic.Int64
}

// workerStats is what one worker measured; merged at the end.
type workerStats struct {
	latencies []time.Duration
	errors    map[string]int
}

// take returns the number of the next request to send and when it may be
// sent, or false when the run is over.
func (s *runState) take() (seq int, at time.Time, ok bool) {
	n := int(s.next.Add(1) - 1)
	if s.opts.Total > 0 && n >= s.opts.Total {
		return 0, time.Time{}, false
	}
	at = s.start
	if s.opts.Rate > 0 {
		at = s.start.Add(time.Duration(float64(n) / s.opts.Rate * float64(time.Second)))
	}
	if !s.deadline.IsZero() && !at.Before(s.deadline) {
		return 0, time.Time{}, false
	}
	return n, at, true
}

func (s *runState) work(ctx context.Context, req Request, stats *workerStats) {
	for ctx.Err() == nil {
		seq, at, ok := s.take()
		if !ok {
			return
		}
		if wait := time.Until(at); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		if !s.deadline.IsZero() && !time.Now().Before(s.deadline) {
			return
		}
		began := time.Now()
		err := req(ctx, seq)
		took := time.Since(began)
		if err != nil {
			if ctx.Err() != nil {
				return // interrupted: not a failure of the server
			}
			if stats.errors == nil {
				stats.errors = map[string]int{}
			}
			stats.errors[err.Error()]++
		} else {
			stats.latencies = append(stats.latencies, took)
		}
		s.done.Add(1)
	}
}

// progressInterval is how often Progress is called.
const progressInterval = 200 * time.Millisecond

// reportProgress calls opts.Progress periodically until the returned
// function is called, which makes a last call.
func (s *runState) reportProgress(ctx context.Context) (stop func()) {
	if s.opts.Progress == nil {
		return func() {}
	}
	report := func() {
		if s.opts.Total > 0 {
			s.opts.Progress(int(s.done.Load()), s.opts.Total)
			return
		}
		secs := int(time.Since(s.start) / time.Second)
		s.opts.Progress(min(secs, int(s.opts.Duration/time.Second)), int(s.opts.Duration/time.Second))
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-quit:
				return
			case <-t.C:
				report()
			}
		}
	})
	return func() {
		close(quit)
		wg.Wait()
		report()
	}
}

// Keys makes the keys of a write workload as etcd's benchmark tool does:
// Size bytes that start with the varint of a number below Space, the
// numbers taken in turn (Sequential) or at random.
type Keys struct {
	Size       int
	Space      int
	Sequential bool
}

// Key returns key number n of the key space (n is reduced modulo it).
// Keys shorter than the varint of n are cut short.
func (k Keys) Key(n int) []byte {
	buf := make([]byte, max(k.Size, binary.MaxVarintLen64))
	binary.PutVarint(buf, int64(n%k.Space))
	return buf[:k.Size]
}

// Next returns the key of request seq.
func (k Keys) Next(seq int) []byte {
	if k.Sequential {
		return k.Key(seq)
	}
	return k.Key(rand.IntN(k.Space))
}

// RandomValue is a value of n random bytes.
func RandomValue(n int) []byte {
	v := make([]byte, n)
	_, _ = crand.Read(v)
	return v
}
