package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/bench/loadgen"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
)

// addKeyFlags declares the key and value flags of the write workloads.
func addKeyFlags(f *pflag.FlagSet, k *keyGenerator, valSize *int) {
	f.IntVar(&k.Size, "key-size", 8, "Key size of each request (bytes); keys start with the varint of their number")
	f.IntVar(valSize, "val-size", 8, "Value size of each request (bytes)")
	f.IntVar(&k.Space, "key-space-size", 1, "Maximum number of distinct keys")
	f.BoolVar(&k.Sequential, "sequential-keys", false, "Use sequential keys (key number = request number modulo --key-space-size) instead of random ones")
}

func newBenchPutCommand(g Globals, o *benchOptions) *cobra.Command {
	var keys keyGenerator
	var valSize int
	cmd := &cobra.Command{
		Use:   "put [options]",
		Short: "Benchmarks puts",
		Long: `Benchmarks puts: each request writes one key of --key-size bytes with a
value of --val-size random bytes.`,
		Example: `  cairn bench put --clients 100 --conns 10 --total 20000 --val-size 256 --sequential-keys --key-space-size 20000`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := keys.check(); err != nil {
				return err
			}
			if valSize < 0 {
				return cmderr.BadArgs("--val-size must not be negative")
			}
			value := loadgen.RandomValue(valSize)
			return runBench(cmd, g, o, func(s *benchSession) error {
				return s.run("put", map[string]any{"key-size": keys.Size, "val-size": valSize,
					"key-space-size": keys.Space, "sequential-keys": keys.Sequential},
					func(worker int) (loadgen.Request, error) {
						kv := s.clientFor(worker).KV
						return func(ctx context.Context, seq int) error {
							_, err := kv.Put(ctx, &pb.PutRequest{Key: keys.Next(seq), Value: value})
							return err
						}, nil
					})
			})
		},
	}
	addKeyFlags(cmd.Flags(), &keys, &valSize)
	return cmd
}

func newBenchRangeCommand(g Globals, o *benchOptions) *cobra.Command {
	var (
		consistency string
		limit       int64
		countOnly   bool
		keysOnly    bool
	)
	cmd := &cobra.Command{
		Use:   "range <key> [range_end] [options]",
		Short: "Benchmarks ranges (reads)",
		Long: `Benchmarks ranges: each request reads the key, or the keys from key up to
range_end, linearizably (--consistency l, the default) or serializably (s).`,
		Example: `  cairn bench range foo --clients 100 --conns 10 --total 20000
  cairn bench range foo --consistency s
  cairn bench range a z --limit 100`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || len(args) > 2 {
				return cmderr.BadArgs("bench range needs a key and an optional range_end")
			}
			req := &pb.RangeRequest{Key: []byte(args[0]), Limit: limit, CountOnly: countOnly, KeysOnly: keysOnly}
			if len(args) == 2 {
				req.RangeEnd = []byte(args[1])
			}
			switch consistency {
			case "l":
			case "s":
				req.Serializable = true
			default:
				return cmderr.BadArgs("unknown consistency flag %q", consistency)
			}
			return runBench(cmd, g, o, func(s *benchSession) error {
				return s.run("range", map[string]any{"key": args[0], "range_end": string(req.RangeEnd),
					"consistency": consistency, "limit": limit, "count-only": countOnly, "keys-only": keysOnly},
					func(worker int) (loadgen.Request, error) {
						kv := s.clientFor(worker).KV
						return func(ctx context.Context, _ int) error {
							_, err := kv.Range(ctx, req)
							return err
						}, nil
					})
			})
		},
	}
	cmd.Flags().StringVar(&consistency, "consistency", "l", "Linearizable(l) or Serializable(s)")
	cmd.Flags().Int64Var(&limit, "limit", 0, "Maximum number of results per request (0 is no limit)")
	cmd.Flags().BoolVar(&countOnly, "count-only", false, "Only count the keys")
	cmd.Flags().BoolVar(&keysOnly, "keys-only", false, "Only get the keys, without their values")
	return cmd
}

func newBenchTxnPutCommand(g Globals, o *benchOptions) *cobra.Command {
	var keys keyGenerator
	var valSize, txnOps int
	cmd := &cobra.Command{
		Use:   "txn-put [options]",
		Short: "Benchmarks transactions of puts",
		Long: `Benchmarks transactions: each request is a transaction of --txn-ops puts
on distinct keys (so --key-space-size must be at least --txn-ops).`,
		Example: `  cairn bench txn-put --txn-ops 4 --key-space-size 10000 --val-size 256 --clients 100 --conns 10`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := keys.check(); err != nil {
				return err
			}
			if txnOps < 1 {
				return cmderr.BadArgs("--txn-ops must be at least 1")
			}
			if keys.Space < txnOps {
				return cmderr.BadArgs("--key-space-size (%d) must be at least --txn-ops (%d): the keys of a transaction are distinct", keys.Space, txnOps)
			}
			value := loadgen.RandomValue(valSize)
			return runBench(cmd, g, o, func(s *benchSession) error {
				return s.run("txn-put", map[string]any{"key-size": keys.Size, "val-size": valSize,
					"key-space-size": keys.Space, "sequential-keys": keys.Sequential, "txn-ops": txnOps},
					func(worker int) (loadgen.Request, error) {
						kv := s.clientFor(worker).KV
						return func(ctx context.Context, seq int) error {
							first := seq * txnOps
							if !keys.Sequential {
								first = rand.IntN(keys.Space)
							}
							txn := &pb.TxnRequest{}
							for j := range txnOps {
								txn.Success = append(txn.Success, &pb.RequestOp{Request: &pb.RequestOp_RequestPut{
									RequestPut: &pb.PutRequest{Key: keys.Key(first + j), Value: value}}})
							}
							_, err := kv.Txn(ctx, txn)
							return err
						}, nil
					})
			})
		},
	}
	addKeyFlags(cmd.Flags(), &keys, &valSize)
	cmd.Flags().IntVar(&txnOps, "txn-ops", 1, "Number of puts per transaction")
	return cmd
}

func newBenchLeaseKeepAliveCommand(g Globals, o *benchOptions) *cobra.Command {
	var ttl int64
	cmd := &cobra.Command{
		Use:   "lease-keepalive [options]",
		Short: "Benchmarks lease keep-alives",
		Long: `Benchmarks lease keep-alives: each client grants a lease of --ttl seconds
and renews it on a keep-alive stream of its own; each request is one
renewal, sent and answered. The leases are revoked at the end.`,
		Example: `  cairn bench lease-keepalive --clients 100 --conns 10 --total 20000`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ttl < 1 {
				return cmderr.BadArgs("--ttl must be at least 1")
			}
			return runBench(cmd, g, o, func(s *benchSession) error {
				var leases []leaseOwner
				defer func() { s.revokeLeases(leases) }()
				return s.run("lease-keepalive", map[string]any{"ttl": ttl},
					func(worker int) (loadgen.Request, error) {
						c := s.clientFor(worker)
						ctx, cancel := context.WithTimeout(cmd.Context(), g.CommandTimeout())
						defer cancel()
						grant, err := c.Lease.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: ttl})
						if err != nil {
							return nil, fmt.Errorf("grant lease: %w", err)
						}
						leases = append(leases, leaseOwner{worker: worker, id: grant.GetID()})
						stream, err := c.Lease.LeaseKeepAlive(s.ctx)
						if err != nil {
							return nil, fmt.Errorf("open keep-alive stream: %w", err)
						}
						return func(_ context.Context, _ int) error {
							if err := stream.Send(&pb.LeaseKeepAliveRequest{ID: grant.GetID()}); err != nil {
								return err
							}
							resp, err := stream.Recv()
							if err != nil {
								return err
							}
							if resp.GetTTL() <= 0 {
								return errors.New("lease not found")
							}
							return nil
						}, nil
					})
			})
		},
	}
	cmd.Flags().Int64Var(&ttl, "ttl", 100, "TTL of the leases (seconds)")
	return cmd
}

// leaseOwner is a lease granted for a worker.
type leaseOwner struct {
	worker int
	id     int64
}

// revokeLeases revokes the leases a workload granted.
func (s *benchSession) revokeLeases(leases []leaseOwner) {
	for _, l := range leases {
		ctx, cancel := context.WithTimeout(context.Background(), s.g.CommandTimeout())
		_, _ = s.clientFor(l.worker).Lease.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: l.id})
		cancel()
	}
}
