package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/bench/loadgen"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// benchWatchOptions are the flags of bench watch.
type benchWatchOptions struct {
	streams           int
	watchersPerStream int
	keys              keyGenerator
	valSize           int
	eventTimeout      time.Duration
	prefix            string // every watcher watches the keys under it
	createdFile       string // written once every watcher is created
	catchUp           bool   // the puts first, then watchers created at the first put's revision
}

func newBenchWatchCommand(g Globals, o *benchOptions) *cobra.Command {
	var w benchWatchOptions
	cmd := &cobra.Command{
		Use:   "watch [options]",
		Short: "Benchmarks watch creation and event delivery",
		Long: `Benchmarks watches in two phases. First --streams watch streams are opened
over the connections, and --watchers-per-stream watchers created on each,
one after the other, watching the --watched-key-total keys in turn: each
creation (request sent, creation confirmed) is one measured request.
Then --total puts are sent to the watched keys by --clients clients (at
--rate), and the delivery of each event to each of its watchers is
measured, from the put being sent to the event being received (the put's
value carries its sending time).

With --watch-prefix P, every watcher watches the keys that start with P
(one range watcher each) and the puts go to P followed by the watched keys:
each put is an event for every watcher.

With --catch-up the puts come first, then the watchers are created, each at
the revision of the first put, as clients that reconnect after a restart
resume their watches: each watcher catches up on the history of the puts.
Event delivery is then measured from the first creation: its slowest is the
time until every watcher is current.

The report has three parts: watch creation, the puts, event delivery.`,
		Example: `  cairn bench watch --streams 10 --watchers-per-stream 100 --watched-key-total 10 \
    --clients 10 --conns 10 --total 2000 --rate 500
  cairn bench watch --streams 100 --watchers-per-stream 100 --watch-prefix /bench/ \
    --watched-key-total 100 --clients 10 --conns 10 --total 200 --rate 20
  cairn bench watch --catch-up --streams 10 --watchers-per-stream 100 --watch-prefix /bench/ \
    --watched-key-total 1000 --clients 100 --conns 10 --total 100000 --val-size 256`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if w.streams < 1 || w.watchersPerStream < 1 {
				return cmderr.BadArgs("--streams and --watchers-per-stream must be at least 1")
			}
			if err := w.keys.check(); err != nil {
				return err
			}
			if cmd.Flags().Changed("watch-prefix") && w.prefix == "" {
				return cmderr.BadArgs("--watch-prefix must not be empty")
			}
			if w.valSize < 8 {
				return cmderr.BadArgs("--val-size must be at least 8: values carry the time of their put")
			}
			return runBench(cmd, g, o, func(s *benchSession) error {
				return runWatchBench(s, &w)
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&w.streams, "streams", 10, "Number of watch streams")
	f.IntVar(&w.watchersPerStream, "watchers-per-stream", 10, "Number of watchers on each stream")
	f.IntVar(&w.keys.Space, "watched-key-total", 1, "Number of distinct keys watched (and written)")
	f.IntVar(&w.keys.Size, "key-size", 32, "Key size of the watched keys (bytes)")
	f.IntVar(&w.valSize, "val-size", 8, "Value size of each put (bytes, at least 8)")
	f.StringVar(&w.prefix, "watch-prefix", "", "Watch the keys under this prefix (every watcher), and put keys under it")
	f.DurationVar(&w.eventTimeout, "event-timeout", 30*time.Second, "How long to wait for the last events once the puts are done")
	f.StringVar(&w.createdFile, "created-file", "", "Write this file once every watcher is created (for a script that measures the phases apart)")
	f.BoolVar(&w.catchUp, "catch-up", false, "Put first, then create the watchers at the first put's revision: each catches up on the puts")
	return cmd
}

// watchBenchResult is the report of bench watch.
type watchBenchResult struct {
	Benchmark  string          `json:"benchmark"`
	Parameters map[string]any  `json:"parameters"`
	Creation   loadgen.Summary `json:"creation"`
	Puts       loadgen.Summary `json:"puts"`
	Events     loadgen.Summary `json:"events"`
	Missing    int             `json:"missing_events"`
}

func (r *watchBenchResult) PrintSimple(p *printer.Printer) {
	for _, part := range []struct {
		title string
		s     loadgen.Summary
	}{{"Watch creation", r.Creation}, {"Puts", r.Puts}, {"Event delivery", r.Events}} {
		fmt.Fprintf(p.Writer(), "%s (%d):\n", part.title, part.s.Requests)
		part.s.WriteText(p.Writer())
		fmt.Fprintln(p.Writer())
	}
	if r.Missing > 0 {
		fmt.Fprintf(p.Writer(), "%d events did not arrive\n", r.Missing)
	}
}

func (r *watchBenchResult) JSONValue(*printer.Printer) any { return r }

func runWatchBench(s *benchSession, w *benchWatchOptions) error {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	streams := make([]*watchFrameStream, w.streams)
	for i := range streams {
		c := s.clientFor(i)
		conn, err := c.ForEndpoint(c.Endpoints()[0])
		if err != nil {
			return err
		}
		if streams[i], err = openWatchFrameStream(ctx, conn); err != nil {
			return fmt.Errorf("open watch stream: %w", err)
		}
	}
	var prefix, prefixEnd []byte
	if w.prefix != "" {
		prefix = []byte(w.prefix)
		prefixEnd = prefixRangeEnd(prefix)
	}
	// Watcher i watches key i % the key space (or the prefix), and put i
	// goes to key i % the key space: the events each put makes are known.
	watchers := w.streams * w.watchersPerStream
	watchersOnKey := make([]int, w.keys.Space)
	for i := range watchers {
		watchersOnKey[i%w.keys.Space]++
	}
	expected := 0
	for seq := range s.o.total {
		if prefix != nil {
			expected += watchers
		} else {
			expected += watchersOnKey[seq%w.keys.Space]
		}
	}

	value := loadgen.RandomValue(w.valSize)
	keys := loadgen.Keys{Size: w.keys.Size, Space: w.keys.Space, Sequential: true}
	var firstRev atomic.Int64 // the lowest revision of a put
	firstRev.Store(math.MaxInt64)
	putAll := func() (*loadgen.Result, error) {
		bar := newProgressBar(s.cmd.ErrOrStderr())
		defer bar.finish()
		return loadgen.Run(ctx, loadgen.Options{
			Workers: s.o.clients, Total: s.o.total, Rate: s.o.rate, Progress: bar.update,
		}, func(worker int) (loadgen.Request, error) {
			kv := s.clientFor(worker).KV
			return func(ctx context.Context, seq int) error {
				v := slices.Clone(value)
				binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
				key := keys.Next(seq)
				if prefix != nil {
					key = append(slices.Clip(prefix), key...)
				}
				resp, err := kv.Put(ctx, &pb.PutRequest{Key: key, Value: v})
				if err == nil {
					for rev := resp.GetHeader().GetRevision(); ; {
						low := firstRev.Load()
						if rev >= low || firstRev.CompareAndSwap(low, rev) {
							break
						}
					}
				}
				return err
			}, nil
		})
	}

	var puts *loadgen.Result
	if w.catchUp {
		var err error
		if puts, err = putAll(); err != nil {
			return err
		}
		if puts.Failed() > 0 {
			return fmt.Errorf("%d puts of the history failed: %v", puts.Failed(), puts.Errors)
		}
	}

	// The streams are read from before the first creation: in a catch-up
	// the events come while later watchers are still being created.
	events := newEventCollector(expected)
	start := time.Now()
	if w.catchUp {
		events.from = start
	}
	var receivers sync.WaitGroup
	for _, st := range streams {
		receivers.Go(func() { events.receive(st, expected/len(streams)) })
	}

	// Phase 1: create the watchers, each stream one after the other.
	bar := newProgressBar(s.cmd.ErrOrStderr())
	creation, err := loadgen.Run(ctx, loadgen.Options{
		Workers: w.streams, Total: watchers, Progress: bar.update,
	}, func(worker int) (loadgen.Request, error) {
		st := streams[worker]
		return func(_ context.Context, seq int) error {
			cr := &pb.WatchCreateRequest{Key: w.keys.Key(seq % w.keys.Space)}
			if prefix != nil {
				cr = &pb.WatchCreateRequest{Key: prefix, RangeEnd: prefixEnd}
			}
			if w.catchUp {
				cr.StartRevision = firstRev.Load()
			}
			create := &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: cr}}
			if err := st.send(create); err != nil {
				return err
			}
			return <-st.created
		}, nil
	})
	bar.finish()
	if err != nil {
		return err
	}
	if creation.Failed() > 0 {
		return fmt.Errorf("%d watchers could not be created: %v", creation.Failed(), creation.Errors)
	}
	if w.createdFile != "" {
		if err := os.WriteFile(w.createdFile, nil, 0o644); err != nil {
			return err
		}
	}

	// Phase 2: the puts, and the events they cause.
	if !w.catchUp {
		start = time.Now()
		if puts, err = putAll(); err != nil {
			return err
		}
		if puts.Failed() > 0 {
			// Not exact per key, but the run is already flawed.
			perPut := 1
			if prefix != nil {
				perPut = watchers
			}
			events.expect(-puts.Failed() * perPut)
		}
	}
	timer := time.NewTimer(w.eventTimeout)
	select {
	case <-events.complete:
	case <-timer.C:
	case <-ctx.Done():
	}
	timer.Stop()
	cancel()
	receivers.Wait()
	delivered := events.result(start)

	return s.print(&watchBenchResult{
		Benchmark: "watch",
		Parameters: s.parameters(map[string]any{"streams": w.streams, "watchers-per-stream": w.watchersPerStream,
			"watched-key-total": w.keys.Space, "key-size": w.keys.Size, "val-size": w.valSize, "watch-prefix": w.prefix,
			"catch-up": w.catchUp}),
		Creation: creation.Summarize(),
		Puts:     puts.Summarize(),
		Events:   delivered.Summarize(),
		Missing:  max(expected-len(delivered.Latencies), 0),
	})
}

// eventCollector gathers the delivery latencies of the events of every
// stream and says when all expected events have arrived.
type eventCollector struct {
	// from, when set, is when every event's latency is measured from;
	// otherwise from the sending time its value carries.
	from      time.Time
	mu        sync.Mutex
	latencies [][]time.Duration // of each stream whose receive has returned
	last      time.Time
	expected  atomic.Int64
	received  atomic.Int64
	complete  chan struct{}
	closeOnce sync.Once
}

func newEventCollector(expected int) *eventCollector {
	e := &eventCollector{complete: make(chan struct{})}
	e.expect(expected)
	return e
}

// expect changes the number of events expected by delta.
func (e *eventCollector) expect(delta int) {
	if e.expected.Add(int64(delta)) <= e.received.Load() {
		e.closeOnce.Do(func() { close(e.complete) })
	}
}

// receive records the events of one stream, about expected of them, until
// it ends, and tells the stream's creations their answers. The latencies
// stay with the stream until then: the receivers share nothing but two
// counters while the events arrive.
func (e *eventCollector) receive(stream *watchFrameStream, expected int) {
	lats := make([]time.Duration, 0, expected)
	var last time.Time
	for {
		resp, err := stream.recv()
		if err != nil {
			stream.answerCreation(&watchFrame{canceled: true, cancelReason: "the stream ended: " + err.Error()})
			break
		}
		if resp.created || resp.canceled {
			stream.answerCreation(resp)
		}
		if len(resp.sent) == 0 {
			continue
		}
		last = time.Now()
		for _, sent := range resp.sent {
			if e.from.IsZero() {
				lats = append(lats, last.Sub(time.Unix(0, sent)))
			} else {
				lats = append(lats, last.Sub(e.from))
			}
		}
		if e.received.Add(int64(len(resp.sent))) >= e.expected.Load() {
			e.closeOnce.Do(func() { close(e.complete) })
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.latencies = append(e.latencies, lats)
	if last.After(e.last) {
		e.last = last
	}
}

// result is the delivery latencies, measured from the first put to the
// last event. Every receive must have returned.
func (e *eventCollector) result(start time.Time) *loadgen.Result {
	e.mu.Lock()
	defer e.mu.Unlock()
	res := &loadgen.Result{Latencies: slices.Concat(e.latencies...), Errors: map[string]int{}}
	slices.Sort(res.Latencies)
	if !e.last.IsZero() {
		res.Elapsed = e.last.Sub(start)
	}
	return res
}

// prefixRangeEnd is the end of the range of the keys that start with
// prefix: the prefix with its last byte below 0xff incremented (and what
// follows it dropped), or "\x00" (every key from prefix on) if it has none.
func prefixRangeEnd(prefix []byte) []byte {
	end := slices.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0}
}
