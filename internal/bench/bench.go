package bench

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/bench/loadgen"
	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// benchOptions are the flags shared by the bench subcommands, as etcd's
// benchmark tool names them.
type benchOptions struct {
	clients int
	conns   int
	total   int
	rate    float64
}

// NewBenchCommand returns bench and its workloads.
func NewBenchCommand(g Globals) *cobra.Command {
	o := &benchOptions{}
	bench := &cobra.Command{
		Use:   "bench <subcommand>",
		Short: "Measures the throughput and latency of a cluster under load",
		Long: `Measures the throughput and latency of a cluster under load, as etcd's
benchmark tool does: --clients requests are in flight at once, shared over
--conns connections (each connection goes to one endpoint, the connections
in turn over --endpoints), until --total requests have been answered,
optionally paced to --rate requests per second.

Each workload prints the run's throughput, a histogram of the latencies
and their percentiles; -w json prints the same figures for machines.`,
		Example: `  # 20,000 puts of 256-byte values by 100 clients over 10 connections
  cairn bench put --clients 100 --conns 10 --total 20000 --val-size 256 \
    --sequential-keys --key-space-size 20000

  # linearizable reads of one key, in JSON
  cairn put foo bar && cairn bench range foo --clients 100 --conns 10 -w json`,
	}
	f := bench.PersistentFlags()
	f.IntVar(&o.clients, "clients", 1, "Total number of concurrent clients (requests in flight)")
	f.IntVar(&o.conns, "conns", 1, "Total number of gRPC connections")
	f.IntVar(&o.total, "total", 10000, "Total number of requests")
	f.Float64Var(&o.rate, "rate", 0, "Maximum requests per second (0 is no limit)")
	bench.AddCommand(newBenchPutCommand(g, o), newBenchRangeCommand(g, o), newBenchTxnPutCommand(g, o),
		newBenchWatchCommand(g, o), newBenchLeaseKeepAliveCommand(g, o))
	return bench
}

// check validates the shared flags.
func (o *benchOptions) check() error {
	switch {
	case o.clients < 1:
		return cmderr.BadArgs("--clients must be at least 1")
	case o.conns < 1:
		return cmderr.BadArgs("--conns must be at least 1")
	case o.total < 1:
		return cmderr.BadArgs("--total must be at least 1")
	case o.rate < 0:
		return cmderr.BadArgs("--rate must not be negative")
	}
	return nil
}

// benchSession is the connections of a bench run.
type benchSession struct {
	g       Globals
	cmd     *cobra.Command
	o       *benchOptions
	ctx     context.Context // ends on Ctrl-C
	clients []*client.Client
}

// runBench opens --conns connections, each a client of one endpoint
// (endpoints in turn), makes sure each is connected, and calls f.
func runBench(cmd *cobra.Command, g Globals, o *benchOptions, f func(s *benchSession) error) error {
	if err := o.check(); err != nil {
		return err
	}
	cfg, err := g.ClientConfig(cmd)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := &benchSession{g: g, cmd: cmd, o: o, ctx: ctx}
	defer func() {
		for _, c := range s.clients {
			c.Close()
		}
	}()
	endpoints := cfg.Endpoints
	for i := range o.conns {
		connCfg := cfg
		connCfg.Endpoints = []string{endpoints[i%len(endpoints)]}
		// A connection has one endpoint: the health probe, which chooses
		// among endpoints, has nothing to choose from, and its status calls
		// (one per connection every probe interval) would add load that is
		// not the benchmark's.
		connCfg.HealthProbeInterval = -1
		c, err := client.New(connCfg)
		if err != nil {
			return cmderr.WithCode(cmderr.ExitBadConnection, err)
		}
		s.clients = append(s.clients, c)
	}
	if err := s.connect(); err != nil {
		return err
	}
	return f(s)
}

// connect waits until every connection has answered a status request, so
// that connecting is not part of the measurement.
func (s *benchSession) connect() error {
	for _, c := range s.clients {
		ctx, cancel := context.WithTimeout(s.ctx, s.g.DialTimeout()+s.g.CommandTimeout())
		_, err := c.Maintenance.Status(ctx, &pb.StatusRequest{})
		cancel()
		if err != nil {
			return cmderr.WithCode(cmderr.ExitBadConnection, fmt.Errorf("%s: %w", c.Endpoints()[0], err))
		}
	}
	return nil
}

// clientFor is the connection of worker i: workers are spread over the
// connections in turn.
func (s *benchSession) clientFor(worker int) *client.Client {
	return s.clients[worker%len(s.clients)]
}

// run sends the load through one Request per worker and prints the report.
func (s *benchSession) run(name string, params map[string]any, newRequest func(worker int) (loadgen.Request, error)) error {
	bar := newProgressBar(s.cmd.ErrOrStderr())
	res, err := loadgen.Run(s.ctx, loadgen.Options{
		Workers: s.o.clients, Total: s.o.total, Rate: s.o.rate, Progress: bar.update,
	}, newRequest)
	bar.finish()
	if err != nil {
		return err
	}
	return s.print(&benchResult{Benchmark: name, Parameters: s.parameters(params), Summary: res.Summarize()})
}

// parameters adds the shared flags to a workload's own.
func (s *benchSession) parameters(params map[string]any) map[string]any {
	out := map[string]any{"clients": s.o.clients, "conns": s.o.conns, "total": s.o.total, "rate": s.o.rate,
		"endpoints": s.g.Endpoints()}
	for k, v := range params {
		out[k] = v
	}
	return out
}

func (s *benchSession) print(result any) error {
	return s.g.Printer(s.cmd).Print(result)
}

// benchResult is the report of one workload.
type benchResult struct {
	Benchmark  string         `json:"benchmark"`
	Parameters map[string]any `json:"parameters"`
	loadgen.Summary
}

func (r *benchResult) PrintSimple(p *printer.Printer) { r.Summary.WriteText(p.Writer()) }
func (r *benchResult) JSONValue(*printer.Printer) any { return r }

// keyGenerator is loadgen.Keys with the checks of the command line.
type keyGenerator struct{ loadgen.Keys }

func (k keyGenerator) check() error {
	if k.Size < 1 {
		return cmderr.BadArgs("--key-size must be at least 1")
	}
	if k.Space < 1 {
		return cmderr.BadArgs("--key-space-size must be at least 1")
	}
	return nil
}
