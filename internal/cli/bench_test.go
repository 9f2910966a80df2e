package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client/clienttest"
)

// benchJSON is the part of `cairn bench -w json` the tests read.
type benchJSON struct {
	Benchmark         string         `json:"benchmark"`
	Parameters        map[string]any `json:"parameters"`
	Requests          int            `json:"requests"`
	Failed            int            `json:"failed"`
	RequestsPerSecond float64        `json:"requests_per_second"`
	Latency           struct {
		Percentiles map[string]float64 `json:"percentiles"`
	} `json:"latency_seconds"`
	Histogram []struct {
		Count int `json:"count"`
	} `json:"histogram"`
}

func decodeBench(t *testing.T, out string) benchJSON {
	t.Helper()
	var b benchJSON
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatalf("bench -w json printed %q: %v", out, err)
	}
	return b
}

// checkBench checks the counts of a bench report.
func checkBench(t *testing.T, b benchJSON, name string, requests int) {
	t.Helper()
	if b.Benchmark != name || b.Requests != requests || b.Failed != 0 || b.RequestsPerSecond <= 0 {
		t.Errorf("%s: report %+v, want %d requests and no failure", name, b, requests)
	}
	inHistogram := 0
	for _, bucket := range b.Histogram {
		inHistogram += bucket.Count
	}
	if inHistogram != requests {
		t.Errorf("%s: histogram counts %d requests of %d", name, inHistogram, requests)
	}
	for _, p := range []string{"p50", "p90", "p99", "p99.9"} {
		if b.Latency.Percentiles[p] <= 0 {
			t.Errorf("%s: no %s latency in %v", name, p, b.Latency.Percentiles)
		}
	}
}

func TestBenchWorkloads(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	endpoints := endpointsFlag(cluster)
	c := clusterClient(t, cluster)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	t.Run("put", func(t *testing.T) {
		b := decodeBench(t, cairnOutput(t, endpoints, "-w", "json", "bench", "put", "--clients", "8", "--conns", "3",
			"--total", "300", "--key-size", "16", "--val-size", "100", "--sequential-keys", "--key-space-size", "50"))
		checkBench(t, b, "put", 300)
		// Keys are 16 bytes starting with the varint of their number: 50 of
		// them, written 6 times each.
		resp, err := c.KV.Range(ctx, &pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count != 50 {
			t.Errorf("%d keys after 300 sequential puts over a key space of 50", resp.Count)
		}
		for _, kv := range resp.Kvs {
			if len(kv.Key) != 16 || len(kv.Value) != 100 || kv.Version != 6 {
				t.Errorf("key %x: %d bytes, value %d bytes, version %d", kv.Key, len(kv.Key), len(kv.Value), kv.Version)
			}
		}
	})
	t.Run("range", func(t *testing.T) {
		for _, consistency := range []string{"l", "s"} {
			b := decodeBench(t, cairnOutput(t, endpoints, "-w", "json", "bench", "range", "--consistency", consistency,
				"--clients", "4", "--conns", "2", "--total", "200", "some-key"))
			checkBench(t, b, "range", 200)
			if b.Parameters["consistency"] != consistency {
				t.Errorf("parameters %v", b.Parameters)
			}
		}
	})
	t.Run("txn-put", func(t *testing.T) {
		before, err := c.KV.Range(ctx, &pb.RangeRequest{Key: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		b := decodeBench(t, cairnOutput(t, endpoints, "-w", "json", "bench", "txn-put", "--txn-ops", "3",
			"--key-space-size", "10", "--total", "40", "--clients", "4"))
		checkBench(t, b, "txn-put", 40)
		after, err := c.KV.Range(ctx, &pb.RangeRequest{Key: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		if got := after.Header.Revision - before.Header.Revision; got != 40 {
			t.Errorf("40 transactions made %d revisions", got)
		}
	})
	t.Run("lease-keepalive", func(t *testing.T) {
		b := decodeBench(t, cairnOutput(t, endpoints, "-w", "json", "bench", "lease-keepalive", "--clients", "5",
			"--conns", "2", "--total", "100"))
		checkBench(t, b, "lease-keepalive", 100)
		leases, err := c.Lease.LeaseLeases(ctx, &pb.LeaseLeasesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(leases.Leases) != 0 {
			t.Errorf("%d leases left after the benchmark", len(leases.Leases))
		}
	})
	t.Run("watch", func(t *testing.T) {
		// 12 watchers over 5 keys: keys 0 and 1 have 3 watchers, the others 2;
		// 50 puts, 10 on each key: 10*(3+3+2+2+2) events.
		checkWatchReport(t, cairnOutput(t, endpoints, "-w", "json", "bench", "watch", "--streams", "3", "--watchers-per-stream", "4",
			"--watched-key-total", "5", "--total", "50", "--clients", "5", "--conns", "2"), 12, 50, 120)
	})
	t.Run("watch-catch-up", func(t *testing.T) {
		// The puts first, then the same watchers created at the first put's
		// revision: each catches up on the events it would have had.
		checkWatchReport(t, cairnOutput(t, endpoints, "-w", "json", "bench", "watch", "--catch-up", "--streams", "3",
			"--watchers-per-stream", "4", "--watched-key-total", "5", "--total", "50", "--clients", "5", "--conns", "2"), 12, 50, 120)
		checkWatchReport(t, cairnOutput(t, endpoints, "-w", "json", "bench", "watch", "--catch-up", "--streams", "3",
			"--watchers-per-stream", "4", "--watch-prefix", "cu/", "--watched-key-total", "5", "--total", "30",
			"--clients", "5", "--conns", "2"), 12, 30, 360)
	})
	t.Run("watch-prefix", func(t *testing.T) {
		// 12 watchers on the prefix, each gets every one of the 30 puts.
		checkWatchReport(t, cairnOutput(t, endpoints, "-w", "json", "bench", "watch", "--streams", "3", "--watchers-per-stream", "4",
			"--watch-prefix", "wp/", "--watched-key-total", "5", "--total", "30", "--clients", "5", "--conns", "2"), 12, 30, 360)
		resp, err := c.KV.Range(ctx, &pb.RangeRequest{Key: []byte("wp/"), RangeEnd: []byte("wp0"), CountOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count != 5 {
			t.Errorf("%d keys under the prefix, want 5", resp.Count)
		}
	})
	t.Run("simple output", func(t *testing.T) {
		out := cairnOutput(t, endpoints, "bench", "put", "--total", "20")
		for _, want := range []string{"Summary:", "Requests/sec:", "Response time histogram:", "Latency distribution:", "99.9% in"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
}

func TestBenchRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "put", "--clients", "0"},
		{"bench", "put", "--key-space-size", "0"},
		{"bench", "txn-put", "--txn-ops", "5", "--key-space-size", "2"},
		{"bench", "range"},
		{"bench", "range", "k", "--consistency", "x"},
		{"bench", "watch", "--val-size", "4"},
	} {
		stdout, stderr, code := runCairnBinary(t, append([]string{"--endpoints=127.0.0.1:1"}, args...)...)
		if code == 0 || stdout != "" || !strings.HasPrefix(stderr, "Error: ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("cairn %s: exit %d, printed %q and %q on stderr; want a one-line error", strings.Join(args, " "), code, stdout, stderr)
		}
	}
}

// checkWatchReport checks the JSON report of bench watch: its creations,
// puts and delivered events, and that no event is missing.
func checkWatchReport(t *testing.T, out string, creations, puts, events int) {
	t.Helper()
	var w struct {
		Creation, Puts, Events benchJSON
		Missing                int `json:"missing_events"`
	}
	if err := json.Unmarshal([]byte(out), &w); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if w.Creation.Requests != creations || w.Puts.Requests != puts || w.Events.Requests != events || w.Missing != 0 {
		t.Errorf("watch report: %d creations, %d puts, %d events, %d missing; want %d, %d, %d, 0\n%s",
			w.Creation.Requests, w.Puts.Requests, w.Events.Requests, w.Missing, creations, puts, events, out)
	}
}
