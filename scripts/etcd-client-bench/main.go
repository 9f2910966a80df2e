// Command etcd-client-bench is the reference load generator for the
// side-by-side benchmarks: the puts and ranges of `cairn bench`, sent with
// etcd's own Go client (go.etcd.io/etcd/client/v3) instead of cairn's, and
// measured by the same code (internal/bench/loadgen). When `cairn bench put`
// reaches at least the throughput of this program against the same server,
// cairn's client is not what limits the figures. It is not part of the
// cairn binary.
//
//	go run ./scripts/etcd-client-bench --endpoints 127.0.0.1:2379 \
//	  --clients 100 --conns 10 --total 20000 put --val-size 256 --sequential-keys --key-space-size 20000
//
// For scripts/bench-side-by-side.sh it also prints free TCP ports on
// 127.0.0.1: `etcd-client-bench free-ports 6`; and for scripts/bench-scale.sh
// it waits for a restarting member's first linearizable read and prints the
// Unix time of its answer in nanoseconds: `etcd-client-bench first-read
// 127.0.0.1:2379 60s`; and for scripts/bench-failover.sh it signals a
// cluster's leader under write load and measures the time until writes
// succeed again (`etcd-client-bench failover --help`); and it lists a range
// in pages as kube-apiserver does (`etcd-client-bench pages --help`).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/cairnkv/cairn/internal/bench/loadgen"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
}

// options are the flags, named as cairn bench's.
type options struct {
	endpoints   string
	clients     int
	conns       int
	total       int
	rate        float64
	output      string
	keys        loadgen.Keys
	valSize     int
	consistency string
}

func run(args []string) error {
	if len(args) == 2 && args[0] == "free-ports" {
		return printFreePorts(args[1])
	}
	if len(args) == 3 && args[0] == "first-read" {
		return firstRead(args[1], args[2])
	}
	if len(args) > 0 && args[0] == "failover" {
		return failover(args[1:])
	}
	if len(args) > 0 && args[0] == "pages" {
		return pages(args[1:])
	}
	var o options
	global := flag.NewFlagSet("etcd-client-bench", flag.ContinueOnError)
	global.StringVar(&o.endpoints, "endpoints", "127.0.0.1:2379", "comma-separated gRPC endpoints")
	global.IntVar(&o.clients, "clients", 1, "concurrent clients (requests in flight)")
	global.IntVar(&o.conns, "conns", 1, "gRPC connections (one etcd client each)")
	global.IntVar(&o.total, "total", 10000, "total number of requests")
	global.Float64Var(&o.rate, "rate", 0, "maximum requests per second (0 is no limit)")
	global.StringVar(&o.output, "w", "simple", "output format: simple or json")
	if err := global.Parse(args); err != nil {
		return err
	}
	rest := global.Args()
	if len(rest) == 0 {
		return fmt.Errorf("usage: etcd-client-bench [global flags] put|range ...")
	}
	workload := flag.NewFlagSet(rest[0], flag.ContinueOnError)
	switch rest[0] {
	case "put":
		workload.IntVar(&o.keys.Size, "key-size", 8, "key size (bytes)")
		workload.IntVar(&o.valSize, "val-size", 8, "value size (bytes)")
		workload.IntVar(&o.keys.Space, "key-space-size", 1, "number of distinct keys")
		workload.BoolVar(&o.keys.Sequential, "sequential-keys", false, "sequential keys instead of random ones")
	case "range":
		workload.StringVar(&o.consistency, "consistency", "l", "linearizable (l) or serializable (s)")
	default:
		return fmt.Errorf("unknown workload %q (put or range)", rest[0])
	}
	if err := workload.Parse(rest[1:]); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	clients, err := connect(ctx, strings.Split(o.endpoints, ","), o.conns)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	if err != nil {
		return err
	}

	var newRequest func(worker int) (loadgen.Request, error)
	params := map[string]any{"client": "go.etcd.io/etcd/client/v3", "clients": o.clients, "conns": o.conns, "total": o.total}
	switch rest[0] {
	case "put":
		if o.keys.Size < 1 || o.keys.Space < 1 {
			return fmt.Errorf("--key-size and --key-space-size must be at least 1")
		}
		value := string(loadgen.RandomValue(o.valSize))
		params["val-size"], params["key-size"], params["key-space-size"] = o.valSize, o.keys.Size, o.keys.Space
		newRequest = func(worker int) (loadgen.Request, error) {
			kv := clients[worker%len(clients)]
			return func(ctx context.Context, seq int) error {
				_, err := kv.Put(ctx, string(o.keys.Next(seq)), value)
				return err
			}, nil
		}
	case "range":
		if workload.NArg() != 1 {
			return fmt.Errorf("range needs one key")
		}
		key := workload.Arg(0)
		var opts []clientv3.OpOption
		switch o.consistency {
		case "l":
		case "s":
			opts = append(opts, clientv3.WithSerializable())
		default:
			return fmt.Errorf("unknown consistency %q", o.consistency)
		}
		params["key"], params["consistency"] = key, o.consistency
		newRequest = func(worker int) (loadgen.Request, error) {
			kv := clients[worker%len(clients)]
			return func(ctx context.Context, _ int) error {
				_, err := kv.Get(ctx, key, opts...)
				return err
			}, nil
		}
	}
	res, err := loadgen.Run(ctx, loadgen.Options{Workers: o.clients, Total: o.total, Rate: o.rate}, newRequest)
	if err != nil {
		return err
	}
	summary := res.Summarize()
	if o.output == "json" {
		return json.NewEncoder(os.Stdout).Encode(struct {
			Benchmark  string         `json:"benchmark"`
			Parameters map[string]any `json:"parameters"`
			loadgen.Summary
		}{rest[0], params, summary})
	}
	summary.WriteText(os.Stdout)
	return nil
}

// connect makes one etcd client per connection, each on one endpoint (the
// endpoints in turn), and waits until each has answered a status request,
// as cairn bench does.
func connect(ctx context.Context, endpoints []string, conns int) ([]*clientv3.Client, error) {
	var clients []*clientv3.Client
	for i := range conns {
		ep := endpoints[i%len(endpoints)]
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return clients, err
		}
		clients = append(clients, c)
		statusCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = c.Status(statusCtx, ep)
		cancel()
		if err != nil {
			return clients, fmt.Errorf("%s: %w", ep, err)
		}
	}
	return clients, nil
}

// printFreePorts prints n distinct ports that are free on 127.0.0.1: all
// are held open together while they are chosen.
func printFreePorts(arg string) error {
	n, err := strconv.Atoi(arg)
	if err != nil || n < 1 {
		return fmt.Errorf("free-ports needs a positive number, got %q", arg)
	}
	var ports []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer l.Close()
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	fmt.Println(strings.Join(ports, " "))
	return nil
}

// firstRead sends a linearizable Get to endpoint every 5 ms, each with 100 ms
// to answer, until one succeeds or the timeout passes, and prints the Unix
// time of the answer in nanoseconds.
func firstRead(endpoint, timeout string) error {
	d, err := time.ParseDuration(timeout)
	if err != nil {
		return fmt.Errorf("first-read timeout: %w", err)
	}
	// gRPC waits a second before it dials again after a refused dial,
	// longer than some restarts take: here it dials again every 5 ms.
	retry := grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 5 * time.Millisecond, Multiplier: 1, MaxDelay: 5 * time.Millisecond},
		MinConnectTimeout: 100 * time.Millisecond,
	})
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialOptions: []grpc.DialOption{retry}, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err := c.Get(ctx, "first-read")
		cancel()
		if err == nil {
			fmt.Println(time.Now().UnixNano())
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no linearizable read within %s: %w", d, err)
		}
		time.Sleep(5 * time.Millisecond) // a retry interval, not a wait for a condition
	}
}
