package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/bench/loadgen"
	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/metrics"
)

// checkDatascaleLoad is a workload of check datascale: limit key-value
// pairs of kvSize bytes each, written by clients concurrent clients.
type checkDatascaleLoad struct {
	limit   int
	kvSize  int
	clients int
}

// checkDatascaleLoads are etcdctl's workloads.
var checkDatascaleLoads = map[string]checkDatascaleLoad{
	"s":  {limit: 10000, kvSize: 1024, clients: 50},
	"m":  {limit: 100000, kvSize: 1024, clients: 200},
	"l":  {limit: 1000000, kvSize: 1024, clients: 500},
	"xl": {limit: 3000000, kvSize: 1024, clients: 1000},
}

// residentMemoryMetric is the Prometheus metric of a member's memory.
const residentMemoryMetric = "process_resident_memory_bytes"

func newCheckDatascaleCommand(g Globals) *cobra.Command {
	var o checkOptions
	cmd := &cobra.Command{
		Use:   "datascale [options]",
		Short: "Check the memory usage of holding data for different workloads on a given server endpoint.",
		Long: `Check the memory usage of holding data for different workloads on a given
server endpoint: writes the --load workload's key-value pairs under
--prefix, and reports how much the member's resident memory grew (read
from its /metrics before and after). The keys are deleted at the end.

If no endpoint is provided, localhost will be used. If multiple endpoints
are provided, first endpoint will be used.

Workloads (--load):
  s    10,000 key-value pairs of 1 KiB by 50 clients
  m    100,000 pairs by 200 clients
  l    1,000,000 pairs by 500 clients
  xl   3,000,000 pairs by 1000 clients`,
		Example: `  cairn check datascale
  cairn check datascale --load m --auto-compact --auto-defrag`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			load, ok := checkDatascaleLoads[o.load]
			if !ok {
				return cmderr.WithCode(cmderr.ExitBadFeature, fmt.Errorf("unknown load option %s", o.load))
			}
			eps := g.Endpoints()
			if len(eps) == 0 {
				return cmderr.BadArgs("no endpoint given")
			}
			return runCheckDatascale(cmd, g, &o, load, eps[0])
		},
	}
	o.addFlags(cmd, "datascale", "/etcdctl-check-datascale/",
		"The datascale check's workload model. Accepted workloads: s(small), m(medium), l(large), xl(xLarge)")
	return cmd
}

func runCheckDatascale(cmd *cobra.Command, g Globals, o *checkOptions, load checkDatascaleLoad, endpoint string) error {
	cfg, err := g.ClientConfig(cmd)
	if err != nil {
		return err
	}
	cfg.Endpoints = []string{endpoint}
	c, err := client.New(cfg)
	if err != nil {
		return cmderr.WithCode(cmderr.ExitBadConnection, err)
	}
	defer c.Close()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := checkPrefixEmpty(cmd, g, c, o.prefix, false); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	reader, err := newMetricsReader(g, endpoint)
	if err != nil {
		return err
	}
	before, err := residentMemory(ctx, reader)
	if err != nil {
		fmt.Fprintf(w, "FAIL: Could not read %s before the put operations.\n", residentMemoryMetric)
		return cmderr.ErrSilent
	}

	var conns []*client.Client
	defer func() { closeAll(conns) }()
	loadCfg := cfg
	loadCfg.HealthProbeInterval = -1 // one endpoint: nothing for the probe to choose
	for range (load.clients + clientsPerConnection - 1) / clientsPerConnection {
		conn, err := client.New(loadCfg)
		if err != nil {
			return cmderr.WithCode(cmderr.ExitBadConnection, err)
		}
		conns = append(conns, conn)
	}
	fmt.Fprintf(w, "Start data scale check for work load [%d key-value pairs, %d bytes per key-value, %d concurrent clients].\n",
		load.limit, load.kvSize, load.clients)
	valueSize := max(load.kvSize-len(o.prefix)-8, 0)
	value := make([]byte, valueSize)
	bar := newProgressBar(cmd.ErrOrStderr())
	res, err := loadgen.Run(ctx, loadgen.Options{Workers: load.clients, Total: load.limit, Progress: bar.update},
		func(worker int) (loadgen.Request, error) {
			kv := conns[worker%len(conns)].KV
			return func(ctx context.Context, seq int) error {
				key := strconv.AppendInt([]byte(o.prefix), int64(seq), 10)
				_, err := kv.Put(ctx, &pb.PutRequest{Key: key, Value: value})
				return err
			}, nil
		})
	bar.finish()
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		_ = checkCleanup(cmd, g, c, &checkOptions{prefix: o.prefix}, nil)
		return cmderr.WithCode(cmderr.ExitInterrupted, errors.New("check datascale interrupted"))
	}
	after, err := residentMemory(ctx, reader)
	if err != nil {
		fmt.Fprintf(w, "FAIL: Could not read %s after the put operations.\n", residentMemoryMetric)
		_ = checkCleanup(cmd, g, c, &checkOptions{prefix: o.prefix}, nil)
		return cmderr.ErrSilent
	}
	if err := checkCleanup(cmd, g, c, o, []string{endpoint}); err != nil {
		return err
	}
	if !printErrors(cmd, res) {
		return cmderr.ErrSilent
	}
	fmt.Fprintf(w, "PASS: Approximate system memory used : %.2f MB.\n", (after-before)/(1024*1024))
	return nil
}

// newMetricsReader reads the metrics on the client URL of endpoint, over
// TLS when the endpoint or the global flags ask for it.
func newMetricsReader(g Globals, endpoint string) (*metrics.Reader, error) {
	tlsCfg, err := g.TLSConfig()
	if err != nil {
		return nil, cmderr.BadArgs("%v", err)
	}
	return metrics.NewReader(endpoint, tlsCfg, g.CommandTimeout()+g.DialTimeout()), nil
}

// residentMemory returns the member's resident memory in bytes.
func residentMemory(ctx context.Context, m *metrics.Reader) (float64, error) {
	samples, err := m.Samples(ctx, residentMemoryMetric)
	if err != nil {
		return 0, err
	}
	if len(samples) == 0 {
		return 0, fmt.Errorf("no %s", residentMemoryMetric)
	}
	return samples[0].Value, nil
}
