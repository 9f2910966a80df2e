package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/bench/loadgen"
	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/keyrange"
)

// NewCheckCommand returns check perf and check datascale.
func NewCheckCommand(g Globals) *cobra.Command {
	check := &cobra.Command{
		Use:   "check <subcommand>",
		Short: "commands for checking properties of the etcd cluster",
	}
	check.AddCommand(newCheckPerfCommand(g), newCheckDatascaleCommand(g))
	return check
}

// checkOptions are the flags shared by the check commands.
type checkOptions struct {
	load        string
	prefix      string
	autoCompact bool
	autoDefrag  bool
}

func (o *checkOptions) addFlags(cmd *cobra.Command, what, defaultPrefix, loadHelp string) {
	f := cmd.Flags()
	f.StringVar(&o.load, "load", "s", loadHelp)
	f.StringVar(&o.prefix, "prefix", defaultPrefix, "The prefix for writing the "+what+" check's keys.")
	f.BoolVar(&o.autoCompact, "auto-compact", false, "Compact storage with last revision after test is finished.")
	f.BoolVar(&o.autoDefrag, "auto-defrag", false, "Defragment storage after test is finished.")
}

// checkPerfLoad is a workload of check perf: puts at limit per second by
// clients concurrent clients, for a minute.
type checkPerfLoad struct {
	limit   int
	clients int
}

// checkPerfLoads are etcdctl's workloads.
var checkPerfLoads = map[string]checkPerfLoad{
	"s":  {limit: 150, clients: 50},
	"m":  {limit: 1000, clients: 200},
	"l":  {limit: 8000, clients: 500},
	"xl": {limit: 15000, clients: 1000},
}

// The pass marks of check perf, as etcdctl's: at least 90% of the expected
// throughput, no request slower than half a second, a standard deviation of
// the latencies under 100 ms.
const (
	checkPerfMinThroughputRatio = 0.9
	checkPerfMaxSlowest         = 0.5
	checkPerfMaxStddev          = 0.1
)

// The keys and values of check perf: keys of 256 bytes after the prefix,
// values of 1 KiB.
const (
	checkPerfKeySize   = 256
	checkPerfValueSize = 1024
)

// clientsPerConnection is how many of the check's concurrent clients share
// a connection.
const clientsPerConnection = 10

func newCheckPerfCommand(g Globals) *cobra.Command {
	var o checkOptions
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "perf [options]",
		Short: "Check the performance of the etcd cluster",
		Long: `Check the performance of the etcd cluster: writes keys under --prefix for a
minute at the rate of the --load workload, then says whether the cluster
kept up (PASS) or not (FAIL), by its throughput (at least 90% of the
expected), its slowest request (at most 0.5 s) and the standard deviation
of the latencies (at most 0.1 s). The keys are deleted at the end.

Workloads (--load):
  s    150 writes/s by 50 clients
  m    1000 writes/s by 200 clients
  l    8000 writes/s by 500 clients
  xl   15000 writes/s by 1000 clients

The exit code is 0 on PASS and 1 on FAIL. A progress bar shows on stderr
when it is a terminal.`,
		Example: `  cairn check perf
  cairn check perf --load m --auto-compact --auto-defrag
  cairn check perf --endpoints 10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379 --load l`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			load, ok := checkPerfLoads[o.load]
			if !ok {
				return cmderr.WithCode(cmderr.ExitBadFeature, fmt.Errorf("unknown load option %s", o.load))
			}
			return g.WithClient(cmd, func(c *client.Client) error {
				return runCheckPerf(cmd, g, c, &o, load, duration)
			})
		},
	}
	o.addFlags(cmd, "performance", "/etcdctl-check-perf/",
		"The performance check's workload model. Accepted workloads: s(small), m(medium), l(large), xl(xLarge). Different workload models use different configurations in terms of number of clients and expected throughput.")
	cmd.Flags().DurationVar(&duration, "duration", time.Minute, "How long the check writes (for quick trials; the verdict is meant for a minute)")
	_ = cmd.Flags().MarkHidden("duration")
	return cmd
}

func runCheckPerf(cmd *cobra.Command, g Globals, c *client.Client, o *checkOptions, load checkPerfLoad, duration time.Duration) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := checkPrefixEmpty(cmd, g, c, o.prefix, true); err != nil {
		return err
	}
	conns, err := checkConnections(cmd, g, load.clients)
	defer closeAll(conns)
	if err != nil {
		return err
	}
	keys := loadgen.Keys{Size: checkPerfKeySize, Space: math.MaxInt}
	value := make([]byte, checkPerfValueSize)
	bar := newProgressBar(cmd.ErrOrStderr())
	res, err := loadgen.Run(ctx, loadgen.Options{
		Workers: load.clients, Duration: duration, Rate: float64(load.limit), Progress: bar.update,
	}, func(worker int) (loadgen.Request, error) {
		kv := conns[worker%len(conns)].KV
		return func(ctx context.Context, _ int) error {
			key := append([]byte(o.prefix), keys.Next(0)...)
			_, err := kv.Put(ctx, &pb.PutRequest{Key: key, Value: value})
			return err
		}, nil
	})
	bar.finish()
	if err != nil {
		return err
	}
	if err := checkCleanup(cmd, g, c, o, c.Endpoints()); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return cmderr.WithCode(cmderr.ExitInterrupted, errors.New("check perf interrupted"))
	}

	s := res.Summarize()
	w := cmd.OutOrStdout()
	ok := true
	throughput := int(math.Round(s.RequestsPerSecond))
	if s.RequestsPerSecond/float64(load.limit) >= checkPerfMinThroughputRatio {
		fmt.Fprintf(w, "PASS: Throughput is %d writes/s\n", throughput)
	} else {
		ok = false
		fmt.Fprintf(w, "FAIL: Throughput too low: %d writes/s\n", throughput)
	}
	if s.Latency.Slowest <= checkPerfMaxSlowest {
		fmt.Fprintf(w, "PASS: Slowest request took %fs\n", s.Latency.Slowest)
	} else {
		ok = false
		fmt.Fprintf(w, "FAIL: Slowest request took too long: %fs\n", s.Latency.Slowest)
	}
	if s.Latency.Stddev <= checkPerfMaxStddev {
		fmt.Fprintf(w, "PASS: Stddev is %fs\n", s.Latency.Stddev)
	} else {
		ok = false
		fmt.Fprintf(w, "FAIL: Stddev too high: %fs\n", s.Latency.Stddev)
	}
	if !printErrors(cmd, res) {
		ok = false
	}
	if !ok {
		fmt.Fprintln(w, "FAIL")
		return cmderr.ErrSilent
	}
	fmt.Fprintln(w, "PASS")
	return nil
}

// printErrors prints one FAIL line per kind of failed request; it says
// whether there were none.
func printErrors(cmd *cobra.Command, res *loadgen.Result) bool {
	for _, msg := range slices.Sorted(maps.Keys(res.Errors)) {
		fmt.Fprintf(cmd.OutOrStdout(), "FAIL: ERROR(%s) -> %d\n", msg, res.Errors[msg])
	}
	return len(res.Errors) == 0
}

// checkPrefixEmpty refuses to run a check over existing keys, which the
// check would overwrite and then delete. quoteCommand quotes the command
// of the message, as check perf does and check datascale does not.
func checkPrefixEmpty(cmd *cobra.Command, g Globals, c *client.Client, prefix string, quoteCommand bool) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), g.CommandTimeout())
	defer cancel()
	key, end, err := keyrange.Parse("check", []string{prefix}, true, false)
	if err != nil {
		return err
	}
	resp, err := c.KV.Range(ctx, &pb.RangeRequest{Key: key, RangeEnd: end, CountOnly: true})
	if err != nil {
		return err
	}
	if resp.GetCount() > 0 {
		del := "cairn del --prefix " + prefix
		if quoteCommand {
			del = "'" + del + "'"
		}
		return cmderr.InvalidInput(fmt.Errorf("prefix %q has keys. Delete with %s first", prefix, del))
	}
	return nil
}

// checkConnections opens the connections of a check's clients, each
// shared by clientsPerConnection of them, over every endpoint.
func checkConnections(cmd *cobra.Command, g Globals, clients int) ([]*client.Client, error) {
	cfg, err := g.ClientConfig(cmd)
	if err != nil {
		return nil, err
	}
	// The health probe of the command's own client keeps watch over the
	// endpoints; the load connections do without (their status calls would
	// add load that is not the check's), and still leave an endpoint that
	// fails.
	cfg.HealthProbeInterval = -1
	var conns []*client.Client
	for range (clients + clientsPerConnection - 1) / clientsPerConnection {
		c, err := client.New(cfg)
		if err != nil {
			return conns, cmderr.WithCode(cmderr.ExitBadConnection, err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

func closeAll(conns []*client.Client) {
	for _, c := range conns {
		c.Close()
	}
}

// checkCleanup deletes the keys of a check and, as asked, compacts at the
// revision of the deletion and defragments the endpoints.
func checkCleanup(cmd *cobra.Command, g Globals, c *client.Client, o *checkOptions, endpoints []string) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), g.CommandTimeout())
	defer cancel()
	key, end, err := keyrange.Parse("check", []string{o.prefix}, true, false)
	if err != nil {
		return err
	}
	del, err := c.KV.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: key, RangeEnd: end})
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if o.autoCompact {
		rev := del.GetHeader().GetRevision()
		fmt.Fprintf(w, "Compacting with revision %d\n", rev)
		if _, err := c.KV.Compact(ctx, &pb.CompactionRequest{Revision: rev, Physical: true}); err != nil {
			return fmt.Errorf("compact at revision %d: %w", rev, err)
		}
		fmt.Fprintf(w, "Compacted with revision %d\n", rev)
	}
	if o.autoDefrag {
		for _, ep := range endpoints {
			fmt.Fprintf(w, "Defragmenting %q\n", ep)
			conn, err := c.ForEndpoint(ep)
			if err != nil {
				return err
			}
			defragCtx, cancel := context.WithTimeout(cmd.Context(), g.CommandTimeout())
			_, err = pb.NewMaintenanceClient(conn).Defragment(defragCtx, &pb.DefragmentRequest{})
			cancel()
			if err != nil {
				return fmt.Errorf("defragment %s: %w", ep, err)
			}
			fmt.Fprintf(w, "Defragmented %q\n", ep)
		}
	}
	return nil
}
