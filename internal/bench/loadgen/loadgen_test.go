package loadgen

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRunSendsTotalOnceEach(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	workers := map[int]bool{}
	res, err := Run(context.Background(), Options{Workers: 7, Total: 1000}, func(worker int) (Request, error) {
		return func(_ context.Context, seq int) error {
			mu.Lock()
			defer mu.Unlock()
			seen[seq]++
			workers[worker] = true
			if seq%100 == 0 {
				return errors.New("boom")
			}
			return nil
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1000 {
		t.Fatalf("%d distinct requests, want 1000", len(seen))
	}
	for seq, n := range seen {
		if n != 1 || seq < 0 || seq >= 1000 {
			t.Fatalf("request %d sent %d times", seq, n)
		}
	}
	if len(res.Latencies) != 990 || res.Failed() != 10 || res.Errors["boom"] != 10 {
		t.Fatalf("%d latencies, %d failed (%v); want 990 and 10", len(res.Latencies), res.Failed(), res.Errors)
	}
	for i := 1; i < len(res.Latencies); i++ {
		if res.Latencies[i] < res.Latencies[i-1] {
			t.Fatal("latencies are not sorted")
		}
	}
	s := res.Summarize()
	if s.Requests != 1000 || s.Failed != 10 {
		t.Fatalf("summary counts %d requests, %d failed", s.Requests, s.Failed)
	}
}

func TestRunPacesToRate(t *testing.T) {
	// Request n may not start before n/rate: 50 requests at 1000/s take at
	// least 49 ms whatever the number of workers.
	res, err := Run(context.Background(), Options{Workers: 10, Total: 50, Rate: 1000}, func(int) (Request, error) {
		return func(context.Context, int) error { return nil }, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Elapsed < 49*time.Millisecond {
		t.Fatalf("50 requests at 1000/s took %v", res.Elapsed)
	}
}

func TestRunForDuration(t *testing.T) {
	var progress []int
	res, err := Run(context.Background(), Options{Workers: 3, Duration: 60 * time.Millisecond, Rate: 500,
		Progress: func(done, of int) { progress = append(progress, done, of) }},
		func(int) (Request, error) {
			return func(context.Context, int) error { return nil }, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	// At 500/s, the requests scheduled before 60 ms are numbers 0 to 29.
	if n := len(res.Latencies); n == 0 || n > 30 {
		t.Fatalf("%d requests in 60 ms at 500/s", n)
	}
	if len(progress) == 0 {
		t.Fatal("no progress reported")
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var once sync.Once
	res, err := Run(ctx, Options{Workers: 2, Total: 1 << 30}, func(int) (Request, error) {
		return func(ctx context.Context, seq int) error {
			once.Do(func() { close(started); cancel() })
			<-ctx.Done()
			return ctx.Err()
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if res.Failed() != 0 {
		t.Fatalf("interrupted requests counted as failures: %v", res.Errors)
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	none := func(int) (Request, error) { return nil, nil }
	if _, err := Run(context.Background(), Options{Workers: 0, Total: 1}, none); err == nil {
		t.Error("no workers accepted")
	}
	if _, err := Run(context.Background(), Options{Workers: 1}, none); err == nil {
		t.Error("neither total nor duration accepted")
	}
	if _, err := Run(context.Background(), Options{Workers: 1, Total: 1}, func(int) (Request, error) {
		return nil, errors.New("cannot connect")
	}); err == nil || !strings.Contains(err.Error(), "cannot connect") {
		t.Errorf("worker setup failure: %v", err)
	}
}

func TestPercentileNearestRank(t *testing.T) {
	var lats []time.Duration
	for i := 1; i <= 1000; i++ {
		lats = append(lats, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{10, 100 * time.Millisecond}, {50, 500 * time.Millisecond}, {99, 990 * time.Millisecond},
		{99.9, 999 * time.Millisecond}, {100, 1000 * time.Millisecond}, {0.01, time.Millisecond}} {
		if got := Percentile(lats, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}

func TestSummaryFigures(t *testing.T) {
	res := &Result{Elapsed: 2 * time.Second, Latencies: []time.Duration{
		1 * time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond,
	}, Errors: map[string]int{"timeout": 2}}
	s := res.Summarize()
	if s.RequestsPerSecond != 2 {
		t.Errorf("throughput %v, want 2/s (successful requests only)", s.RequestsPerSecond)
	}
	if s.Latency.Fastest != 0.001 || s.Latency.Slowest != 0.010 || s.Latency.Average != 0.004 {
		t.Errorf("latency figures %+v", s.Latency)
	}
	total := 0
	for i, b := range s.Histogram {
		total += b.Count
		if i > 0 && b.UpTo < s.Histogram[i-1].UpTo {
			t.Errorf("histogram bounds decrease: %+v", s.Histogram)
		}
	}
	if total != 4 || s.Histogram[len(s.Histogram)-1].UpTo != 0.010 {
		t.Errorf("histogram %+v", s.Histogram)
	}
	if s.P(99) != 0.010 || s.Latency.Percentiles["p99.9"] != 0.010 || s.Latency.Percentiles["p50"] != 0.002 {
		t.Errorf("percentiles %v", s.Latency.Percentiles)
	}
	var b strings.Builder
	s.WriteText(&b)
	for _, want := range []string{"Requests/sec:\t2.0000", "Response time histogram:", "99.9% in 0.0100 secs.", "[2]\ttimeout"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestKeys(t *testing.T) {
	k := Keys{Size: 8, Space: 3, Sequential: true}
	if string(k.Next(4)) != string(k.Key(1)) || len(k.Key(1)) != 8 {
		t.Errorf("sequential key 4 of 3 is %x", k.Next(4))
	}
	if string(k.Key(0)) == string(k.Key(1)) {
		t.Error("distinct numbers give the same key")
	}
	short := Keys{Size: 1, Space: 1000}
	if len(short.Key(999)) != 1 {
		t.Error("a key is not cut to its size")
	}
	if len(RandomValue(256)) != 256 {
		t.Error("value size")
	}
}
