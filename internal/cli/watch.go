package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/keyrange"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// watchOptions are the flags of watch, also accepted by the watch lines of
// interactive mode.
type watchOptions struct {
	prefix         bool
	prevKV         bool
	progressNotify bool
	rev            int64
}

func (o *watchOptions) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.prefix, "prefix", false, "Watch on a prefix if prefix is set")
	f.BoolVar(&o.prevKV, "prev-kv", false, "get the previous key-value pair before the event happens")
	f.BoolVar(&o.progressNotify, "progress-notify", false, "get periodic watch progress notification from server")
	f.Int64Var(&o.rev, "rev", 0, "Revision to start watching")
}

// watchSpec is one watch to run: what to watch and what to do with events.
type watchSpec struct {
	req  *pb.WatchCreateRequest
	exec []string // a command to run for each event instead of printing it
}

func newWatchCommand(g *globalOptions) *cobra.Command {
	var o watchOptions
	var interactive bool
	cmd := &cobra.Command{
		Use:   "watch [options] [key or prefix] [range_end] [--] [exec-command arg1 arg2 ...]",
		Short: "Watches events stream on keys or prefixes",
		Long: `Watches events stream on keys or prefixes.

The key and range end can also come from the CAIRN_WATCH_KEY (or
ETCDCTL_WATCH_KEY) and CAIRN_WATCH_RANGE_END (ETCDCTL_WATCH_RANGE_END)
environment variables. A command given after the key runs once per event,
with ETCD_WATCH_REVISION, ETCD_WATCH_EVENT_TYPE, ETCD_WATCH_KEY and
ETCD_WATCH_VALUE in its environment.

In interactive mode (-i), each line of standard input is a command:
"watch [options] <key> [range_end] [--] [exec-command ...]" starts a
watch, "progress" asks the server for a progress notification.`,
		Example: `  cairn watch foo
  cairn watch --prefix /jobs/ --prev-kv -w json
  cairn watch foo -- sh -c 'echo "$ETCD_WATCH_KEY changed at $ETCD_WATCH_REVISION"'
  cairn watch -i`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if interactive {
				if len(args) != 0 {
					return cmderr.BadArgs("watch in interactive mode accepts no arguments")
				}
				return g.withClient(cmd, func(c *client.Client) error {
					return runInteractiveWatch(ctx, cmd, c, g.printer(cmd))
				})
			}
			spec, err := o.spec(args, cmd.ArgsLenAtDash(), true)
			if err != nil {
				return err
			}
			return g.withClient(cmd, func(c *client.Client) error {
				w := c.Watch(ctx, spec.req)
				return printWatch(ctx, cmd, w, spec, g.printer(cmd))
			})
		},
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().BoolVarP(&interactive, "interactive", "i", false, "Interactive mode")
	return cmd
}

// watchEnv returns the value of a CAIRN_ or ETCDCTL_ watch variable.
func watchEnv(name string) string {
	for _, prefix := range envPrefixes {
		if v := os.Getenv(prefix + name); v != "" {
			return v
		}
	}
	return ""
}

// spec builds a watch from the arguments: key, range end, and an optional
// command (after "--", at index dash, or any third argument). useEnv lets
// the key and range end come from the environment.
func (o *watchOptions) spec(args []string, dash int, useEnv bool) (*watchSpec, error) {
	var execArgs []string
	switch {
	case dash >= 0:
		args, execArgs = args[:dash], args[dash:]
	case len(args) > 2:
		args, execArgs = args[:2], args[2:]
	}
	if useEnv {
		key, end := watchEnv("WATCH_KEY"), watchEnv("WATCH_RANGE_END")
		if key == "" && end != "" {
			return nil, cmderr.BadArgs("ETCDCTL_WATCH_KEY is empty but got ETCDCTL_WATCH_RANGE_END=%q", end)
		}
		if key != "" && len(args) == 0 {
			args = append(args, key)
			if end != "" {
				args = append(args, end)
			}
		}
	}
	if len(args) == 0 || len(args) > 2 {
		return nil, cmderr.BadArgs("bad number of arguments")
	}
	if dash == 0 || (dash > 0 && len(execArgs) == 0) {
		return nil, cmderr.BadArgs("exec command is not provided")
	}
	if o.prefix && len(args) == 2 {
		return nil, cmderr.BadArgs("`range_end` and `--prefix` are mutually exclusive")
	}
	req := &pb.WatchCreateRequest{Key: []byte(args[0]), StartRevision: o.rev,
		PrevKv: o.prevKV, ProgressNotify: o.progressNotify}
	switch {
	case len(args) == 2:
		req.RangeEnd = []byte(args[1])
	case o.prefix:
		req.RangeEnd = keyrange.PrefixEnd(req.Key)
		if len(req.Key) == 0 {
			req.Key, req.RangeEnd = []byte{0}, []byte{0}
		}
	}
	return &watchSpec{req: req, exec: execArgs}, nil
}

// printWatch prints the responses of w, and runs spec's command for each
// event if it has one, until ctx is done or the watch ends.
func printWatch(ctx context.Context, cmd *cobra.Command, w *client.Watch, spec *watchSpec, p *printer.Printer) error {
	for resp := range w.Responses {
		// Each response goes out in one write, whole, even when several
		// watches share the output.
		var buf bytes.Buffer
		if resp.Canceled {
			fmt.Fprintf(cmd.ErrOrStderr(), "watch was canceled (%v)\n", resp.Err)
		}
		if resp.IsProgressNotify() {
			fmt.Fprintf(&buf, "progress notify: %d\n", resp.Header.GetRevision())
		}
		if err := p.WithWriter(&buf).Print(&printer.WatchResult{Resp: &pb.WatchResponse{Header: resp.Header, Events: resp.Events,
			CompactRevision: resp.CompactRevision, Canceled: resp.Canceled, CancelReason: resp.CancelReason}}); err != nil {
			return err
		}
		if _, err := p.Writer().Write(buf.Bytes()); err != nil {
			return err
		}
		if len(spec.exec) > 0 {
			if err := runWatchCommand(ctx, cmd, spec.exec, resp); err != nil {
				return err
			}
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return cmderr.WithCode(cmderr.ExitInterrupted, errors.New("watch is canceled by the server"))
}

// runWatchCommand runs the command of a watch once per event of resp.
func runWatchCommand(ctx context.Context, cmd *cobra.Command, args []string, resp client.WatchResponse) error {
	for _, ev := range resp.Events {
		c := exec.CommandContext(ctx, args[0], args[1:]...)
		c.Env = append(os.Environ(),
			fmt.Sprintf("ETCD_WATCH_REVISION=%d", resp.Header.GetRevision()),
			fmt.Sprintf("ETCD_WATCH_EVENT_TYPE=%q", ev.GetType()),
			fmt.Sprintf("ETCD_WATCH_KEY=%q", ev.GetKv().GetKey()),
			fmt.Sprintf("ETCD_WATCH_VALUE=%q", ev.GetKv().GetValue()))
		c.Stdout, c.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
		if err := c.Run(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "command %q error (%v)\n", args, err)
			return cmderr.ErrSilent
		}
	}
	return nil
}

// runInteractiveWatch reads watch and progress commands from stdin until it
// ends or ctx is done, running the watches side by side.
func runInteractiveWatch(ctx context.Context, cmd *cobra.Command, c *client.Client, p *printer.Printer) error {
	ctx, cancel := context.WithCancel(ctx)
	var (
		watches []*client.Watch
		wg      sync.WaitGroup
	)
	defer wg.Wait()
	defer cancel()
	locked := p.WithWriter(&lockedWriter{w: p.Writer()})
	lines := readLines(ctx, cmd.InOrStdin())
	for {
		var in lineOrError
		select {
		case <-ctx.Done():
			return nil
		case in = <-lines:
		}
		if in.err != nil {
			return cmderr.InvalidInput(fmt.Errorf("error reading watch request line: %w", in.err))
		}
		args := splitArgs(in.line)
		if len(args) == 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "Invalid command: %s (watch and progress supported)\n", in.line)
			continue
		}
		switch args[0] {
		case "watch":
			if len(args) < 2 {
				fmt.Fprintf(cmd.ErrOrStderr(), "Invalid command %s (command type or key is not provided)\n", in.line)
				continue
			}
			spec, err := parseWatchLine(args[1:])
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "Invalid command %s (%v)\n", in.line, err)
				continue
			}
			w := c.Watch(ctx, spec.req)
			watches = append(watches, w)
			wg.Go(func() { _ = printWatch(ctx, cmd, w, spec, locked) })
		case "progress":
			for _, w := range watches {
				_ = w.RequestProgress()
			}
		default:
			fmt.Fprintf(cmd.ErrOrStderr(), "Invalid command %s (only support watch)\n", in.line)
		}
	}
}

// lineOrError is a line of input, or the error that ended the input.
type lineOrError struct {
	line string
	err  error
}

// readLines reads r line by line in the background, so that its reader can
// stop waiting for input; the last item carries the error that ended it.
// Reading stops at the first line after ctx is done.
func readLines(ctx context.Context, r io.Reader) <-chan lineOrError {
	lines := make(chan lineOrError)
	go func() {
		in := bufio.NewReader(r)
		for {
			line, err := in.ReadString('\n')
			item := lineOrError{line: strings.TrimSuffix(line, "\n"), err: err}
			select {
			case lines <- item:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return lines
}

// parseWatchLine parses the arguments of a watch line of interactive mode.
func parseWatchLine(args []string) (*watchSpec, error) {
	var o watchOptions
	flags := pflag.NewFlagSet("watch", pflag.ContinueOnError)
	flags.SetOutput(io.Discard)
	o.addFlags(flags)
	if err := flags.Parse(args); err != nil {
		return nil, err
	}
	return o.spec(flags.Args(), flags.ArgsLenAtDash(), false)
}

// lockedWriter serialises writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
