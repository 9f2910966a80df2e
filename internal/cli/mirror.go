package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/keyrange"
)

// mirrorOptions are the flags of make-mirror.
type mirrorOptions struct {
	destCACert            string
	destCert              string
	destKeyFile           string
	destInsecureTransport bool
	destUser              string
	destPassword          string
	destPrefix            string
	noDestPrefix          bool
	prefix                string
	rev                   int64
	maxTxnOps             uint
	progressInterval      time.Duration
}

// mirrorPageSize is the number of keys read at a time by the initial copy.
const mirrorPageSize = 1000

// addMirrorCommand attaches make-mirror.
func addMirrorCommand(root *cobra.Command, g *globalOptions) {
	addToGroup(root, utilityGroup, newMakeMirrorCommand(g))
}

func newMakeMirrorCommand(g *globalOptions) *cobra.Command {
	var o mirrorOptions
	cmd := &cobra.Command{
		Use:   "make-mirror [options] <destination>",
		Short: "Makes a mirror at the destination etcd cluster",
		Long: `Makes a mirror at the destination etcd cluster: copies the keys under
--prefix (all keys by default) as of now, or only the changes from
revision --rev on, then applies every later change as it happens, until
interrupted. Each source revision is applied as one transaction (split
past --max-txn-ops operations). Leases are not mirrored.

Keys keep their names, or have --prefix replaced by --dest-prefix, or
removed with --no-dest-prefix. The number of keys mirrored so far is
printed every 30 seconds.

<destination> is the client endpoint of the destination cluster; the
--dest-* flags give its credentials and TLS files.`,
		Example: `  cairn make-mirror 10.0.1.1:2379
  cairn make-mirror --prefix /app/ --dest-prefix /app-copy/ 10.0.1.1:2379
  cairn make-mirror --prefix /app/ --rev 1234 --dest-user root:secret 10.0.1.1:2379`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmderr.BadArgs("make-mirror takes one destination argument")
			}
			if o.destPrefix != "" && o.noDestPrefix {
				return cmderr.BadArgs("`--dest-prefix` and `--no-dest-prefix` cannot be set at the same time, choose one")
			}
			if o.maxTxnOps == 0 {
				return cmderr.BadArgs("--max-txn-ops must be at least 1")
			}
			dst, err := o.destination(cmd, g, args[0])
			if err != nil {
				return err
			}
			defer dst.Close()
			return g.withClient(cmd, func(src *client.Client) error {
				return runMirror(cmd, g, src, dst, &o)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.destCACert, "dest-cacert", "", "Verify certificates of TLS enabled secure servers using this CA bundle")
	f.StringVar(&o.destCert, "dest-cert", "", "Identify secure client using this TLS certificate file for the destination cluster")
	f.StringVar(&o.destKeyFile, "dest-key", "", "Identify secure client using this TLS key file")
	f.BoolVar(&o.destInsecureTransport, "dest-insecure-transport", true, "Disable transport security for client connections")
	f.StringVar(&o.destUser, "dest-user", "", "Destination username[:password] for authentication (prompt if password is not supplied)")
	f.StringVar(&o.destPassword, "dest-password", "", "Destination password for authentication (if this option is used, --user option shouldn't include password)")
	f.StringVar(&o.destPrefix, "dest-prefix", "", "destination prefix to mirror a prefix to a different prefix in the destination cluster")
	f.BoolVar(&o.noDestPrefix, "no-dest-prefix", false, "mirror key-values to the root of the destination cluster")
	f.StringVar(&o.prefix, "prefix", "", "Key-value prefix to mirror")
	f.Int64Var(&o.rev, "rev", 0, "Specify the kv revision to start to mirror")
	f.UintVar(&o.maxTxnOps, "max-txn-ops", 128, "Maximum number of operations permitted in a transaction during syncing updates.")
	f.DurationVar(&o.progressInterval, "progress-interval", 30*time.Second, "How often the number of keys mirrored is printed")
	_ = f.MarkHidden("progress-interval")
	return cmd
}

// destination connects to the destination cluster with the --dest-* flags
// and the global connection settings.
func (o *mirrorOptions) destination(cmd *cobra.Command, g *globalOptions, endpoint string) (*client.Client, error) {
	cfg, err := g.clientConfig(cmd)
	if err != nil {
		return nil, err
	}
	cfg.Endpoints = nil
	for ep := range strings.SplitSeq(endpoint, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			cfg.Endpoints = append(cfg.Endpoints, ep)
		}
	}
	cfg.Username, cfg.Password, cfg.Token = "", "", ""
	if o.destUser != "" {
		user, password := o.destUser, o.destPassword
		if name, pass, found := strings.Cut(user, ":"); found && password == "" {
			user, password = name, pass
		} else if password == "" {
			if password, err = readPassword(cmd, "Password: "); err != nil {
				return nil, cmderr.BadArgs("%v", err)
			}
		}
		cfg.Username, cfg.Password = user, password
	}
	files := client.TLSFiles{CAFile: o.destCACert, CertFile: o.destCert, KeyFile: o.destKeyFile}
	cfg.TLS = nil
	if !files.Empty() || !o.destInsecureTransport {
		if cfg.TLS, err = files.Config(); err != nil {
			return nil, cmderr.BadArgs("%v", err)
		}
	}
	dst, err := client.New(cfg)
	if err != nil {
		return nil, cmderr.WithCode(cmderr.ExitBadConnection, err)
	}
	return dst, nil
}

// destKey is the destination's name for a source key, or nil for a key
// that cannot be mirrored (the prefix itself, with --no-dest-prefix).
func (o *mirrorOptions) destKey(key []byte) []byte {
	rest := bytes.TrimPrefix(key, []byte(o.prefix))
	switch {
	case o.noDestPrefix:
		if len(rest) == 0 {
			return nil
		}
		return rest
	case o.destPrefix != "":
		return append([]byte(o.destPrefix), rest...)
	}
	return key
}

// mirror copies one source to one destination.
type mirror struct {
	cmd   *cobra.Command
	g     *globalOptions
	src   *client.Client
	dst   *client.Client
	o     *mirrorOptions
	total atomic.Int64
}

func runMirror(cmd *cobra.Command, g *globalOptions, src, dst *client.Client, o *mirrorOptions) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := &mirror{cmd: cmd, g: g, src: src, dst: dst, o: o}
	var wg sync.WaitGroup
	defer wg.Wait()
	progressCtx, stopProgress := context.WithCancel(ctx)
	defer stopProgress()
	wg.Go(func() { m.printProgress(progressCtx) })

	start := o.rev
	if start == 0 {
		rev, err := m.copyBase(ctx)
		if err != nil {
			return interruptedOK(ctx, err)
		}
		start = rev + 1
	}
	return interruptedOK(ctx, m.followUpdates(ctx, start))
}

// interruptedOK turns the error of work cut short by Ctrl-C into success.
func interruptedOK(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// printProgress prints the number of keys mirrored at each interval.
func (m *mirror) printProgress(ctx context.Context) {
	t := time.NewTicker(m.o.progressInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fmt.Fprintln(m.cmd.OutOrStdout(), m.total.Load())
		}
	}
}

// sourceRange is the key range of --prefix.
func (m *mirror) sourceRange() (key, end []byte) {
	key, end, _ = keyrange.Parse("make-mirror", []string{m.o.prefix}, true, false)
	return key, end
}

// copyBase copies the keys of the prefix as of one revision, page by page,
// and returns that revision.
func (m *mirror) copyBase(ctx context.Context) (int64, error) {
	key, end := m.sourceRange()
	var rev int64
	for {
		resp, err := m.src.KV.Range(ctx, &pb.RangeRequest{Key: key, RangeEnd: end, Revision: rev, Limit: mirrorPageSize})
		if err != nil {
			return 0, err
		}
		if rev == 0 {
			rev = resp.GetHeader().GetRevision()
		}
		var ops []*pb.RequestOp
		for _, kv := range resp.GetKvs() {
			if op := m.putOp(kv); op != nil {
				ops = append(ops, op)
			}
		}
		if err := m.apply(ctx, ops); err != nil {
			return 0, err
		}
		m.total.Add(int64(len(resp.GetKvs())))
		if !resp.GetMore() || len(resp.GetKvs()) == 0 {
			return rev, nil
		}
		key = append(bytes.Clone(resp.GetKvs()[len(resp.GetKvs())-1].GetKey()), 0)
	}
}

// followUpdates applies the changes of the prefix from revision start on,
// one source revision per transaction, until ctx ends or the watch fails.
func (m *mirror) followUpdates(ctx context.Context, start int64) error {
	key, end := m.sourceRange()
	w := m.src.Watch(ctx, &pb.WatchCreateRequest{Key: key, RangeEnd: end, StartRevision: start})
	var (
		ops []*pb.RequestOp
		rev int64
	)
	for resp := range w.Responses {
		if resp.Err != nil {
			return resp.Err
		}
		for _, ev := range resp.Events {
			if r := ev.GetKv().GetModRevision(); r != rev || len(ops) >= int(m.o.maxTxnOps) {
				if err := m.apply(ctx, ops); err != nil {
					return err
				}
				ops, rev = ops[:0], r
			}
			var op *pb.RequestOp
			if ev.GetType() == mvccpb.DELETE {
				op = m.deleteOp(ev.GetKv())
			} else {
				op = m.putOp(ev.GetKv())
			}
			if op != nil {
				ops = append(ops, op)
			}
			m.total.Add(1)
		}
		// A revision's events come in one response: apply them now.
		if err := m.apply(ctx, ops); err != nil {
			return err
		}
		ops = ops[:0]
	}
	return ctx.Err()
}

func (m *mirror) putOp(kv *mvccpb.KeyValue) *pb.RequestOp {
	key := m.o.destKey(kv.GetKey())
	if key == nil {
		return nil
	}
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: key, Value: kv.GetValue()}}}
}

func (m *mirror) deleteOp(kv *mvccpb.KeyValue) *pb.RequestOp {
	key := m.o.destKey(kv.GetKey())
	if key == nil {
		return nil
	}
	return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: key}}}
}

// apply writes ops to the destination in transactions of at most
// --max-txn-ops operations.
func (m *mirror) apply(ctx context.Context, ops []*pb.RequestOp) error {
	for len(ops) > 0 {
		n := min(len(ops), int(m.o.maxTxnOps))
		txnCtx, cancel := context.WithTimeout(ctx, m.g.commandTimeout())
		_, err := m.dst.KV.Txn(txnCtx, &pb.TxnRequest{Success: ops[:n]})
		cancel()
		if err != nil {
			return fmt.Errorf("write to the destination: %w", err)
		}
		ops = ops[n:]
	}
	return nil
}
