package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/keyrange"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// addKVCommands attaches get, put, del, txn, compaction and watch.
func addKVCommands(root *cobra.Command, g *globalOptions) {
	addToGroup(root, kvGroup, newGetCommand(g), newPutCommand(g), newDelCommand(g), newTxnCommand(g),
		newCompactionCommand(g), newWatchCommand(g))
}

// getOptions are the flags of get.
type getOptions struct {
	consistency    string
	order          string
	sortBy         string
	prefix         bool
	fromKey        bool
	rev            int64
	limit          int64
	keysOnly       bool
	countOnly      bool
	printValueOnly bool
	stream         bool
	minCreateRev   int64
	maxCreateRev   int64
	minModRev      int64
	maxModRev      int64
}

func newGetCommand(g *globalOptions) *cobra.Command {
	var o getOptions
	cmd := &cobra.Command{
		Use:   "get [options] <key> [range_end]",
		Short: "Gets the key or a range of keys",
		Example: `  cairn get foo
  cairn get --prefix /registry/ --keys-only
  cairn get foo --rev 42 -w json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := o.request(args)
			if err != nil {
				return err
			}
			if err := o.checkFormat(g.v.GetString("write-out")); err != nil {
				return err
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				rangeFunc := c.KV.Range
				if o.stream {
					rangeFunc = c.RangeStream
				}
				resp, err := rangeFunc(ctx, req)
				if err != nil {
					return err
				}
				return g.printer(cmd).Print(&printer.GetResult{Resp: resp, ValueOnly: o.printValueOnly})
			})
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// addFlags declares the flags of get, also accepted by get requests in txn.
func (o *getOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.consistency, "consistency", "l", "Linearizable(l) or Serializable(s)")
	f.StringVar(&o.order, "order", "", "Order of results; ASCEND or DESCEND (ASCEND by default)")
	f.StringVar(&o.sortBy, "sort-by", "", "Sort target; CREATE, KEY, MODIFY, VALUE, or VERSION")
	f.Int64Var(&o.limit, "limit", 0, "Maximum number of results")
	f.BoolVar(&o.prefix, "prefix", false, "Get keys with matching prefix")
	f.BoolVar(&o.fromKey, "from-key", false, "Get keys that are greater than or equal to the given key using byte compare")
	f.Int64Var(&o.rev, "rev", 0, "Specify the kv revision")
	f.BoolVar(&o.keysOnly, "keys-only", false, "Get only the keys")
	f.BoolVar(&o.countOnly, "count-only", false, "Get only the count")
	f.BoolVar(&o.printValueOnly, "print-value-only", false, `Only write values when using the "simple" output format`)
	f.BoolVar(&o.stream, "stream", false, "Use the RangeStream RPC")
	f.Int64Var(&o.minCreateRev, "min-create-rev", 0, "Minimum create revision")
	f.Int64Var(&o.maxCreateRev, "max-create-rev", 0, "Maximum create revision")
	f.Int64Var(&o.minModRev, "min-mod-rev", 0, "Minimum modification revision")
	f.Int64Var(&o.maxModRev, "max-mod-rev", 0, "Maximum modification revision")
}

var (
	sortOrders = map[string]pb.RangeRequest_SortOrder{
		"": pb.RangeRequest_NONE, "ASCEND": pb.RangeRequest_ASCEND, "DESCEND": pb.RangeRequest_DESCEND,
	}
	sortTargets = map[string]pb.RangeRequest_SortTarget{
		"": pb.RangeRequest_KEY, "CREATE": pb.RangeRequest_CREATE, "KEY": pb.RangeRequest_KEY,
		"MODIFY": pb.RangeRequest_MOD, "VALUE": pb.RangeRequest_VALUE, "VERSION": pb.RangeRequest_VERSION,
	}
)

// checkFormat fails on flags that the output format cannot show.
func (o *getOptions) checkFormat(format string) error {
	if o.countOnly && format != printer.FormatFields {
		return cmderr.BadArgs("--count-only is only for `--write-out=fields`")
	}
	if o.printValueOnly && format != printer.FormatSimple {
		return cmderr.BadArgs("print-value-only is only for `--write-out=simple`")
	}
	return nil
}

// request checks the arguments and flags of get and builds its request.
func (o *getOptions) request(args []string) (*pb.RangeRequest, error) {
	key, rangeEnd, err := keyrange.Parse("get", args, o.prefix, o.fromKey)
	if err != nil {
		return nil, err
	}
	if o.keysOnly && o.countOnly {
		return nil, cmderr.BadArgs("`--keys-only` and `--count-only` cannot be set at the same time, choose one")
	}
	req := &pb.RangeRequest{
		Key: key, RangeEnd: rangeEnd, Revision: o.rev, Limit: o.limit,
		KeysOnly: o.keysOnly, CountOnly: o.countOnly,
		MinCreateRevision: o.minCreateRev, MaxCreateRevision: o.maxCreateRev,
		MinModRevision: o.minModRev, MaxModRevision: o.maxModRev,
	}
	switch o.consistency {
	case "l":
	case "s":
		req.Serializable = true
	default:
		return nil, cmderr.WithCode(cmderr.ExitBadFeature, fmt.Errorf("unknown consistency flag %q", o.consistency))
	}
	order, ok := sortOrders[strings.ToUpper(o.order)]
	if !ok {
		return nil, cmderr.WithCode(cmderr.ExitBadFeature, fmt.Errorf("bad sort order %v", o.order))
	}
	target, ok := sortTargets[strings.ToUpper(o.sortBy)]
	if !ok {
		return nil, cmderr.WithCode(cmderr.ExitBadFeature, fmt.Errorf("bad sort target %v", o.sortBy))
	}
	if o.sortBy != "" && order == pb.RangeRequest_NONE {
		order = pb.RangeRequest_ASCEND
	}
	req.SortOrder, req.SortTarget = order, target
	return req, nil
}

// requestOp builds the request of a get line of a transaction.
func (o *getOptions) requestOp(args []string) (*pb.RequestOp, error) {
	req, err := o.request(args)
	if err != nil {
		return nil, err
	}
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: req}}, nil
}

// putOptions are the flags of put.
type putOptions struct {
	lease       string
	prevKV      bool
	ignoreValue bool
	ignoreLease bool
}

func newPutCommand(g *globalOptions) *cobra.Command {
	var o putOptions
	cmd := &cobra.Command{
		Use:   "put [options] <key> <value> (<value> can also be given from stdin)",
		Short: "Puts the given key into the store",
		Long: `Puts the given key into the store.

When <value> begins with '-', <value> is interpreted as a flag.
Insert '--' for workaround:

$ put <key> -- <value>
$ put -- <key> <value>

If <value> isn't given as a command line argument and '--ignore-value' is not specified,
this command tries to read the value from standard input.

For example,
$ cat file | put <key>
will store the content of the file to <key>.`,
		Example: `  cairn put foo bar
  cairn put foo bar --lease=1234abcd
  cat file | cairn put foo`,
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := o.request(args, cmd.InOrStdin())
			if err != nil {
				return err
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := c.KV.Put(ctx, req)
				if err != nil {
					return err
				}
				return g.printer(cmd).Print(&printer.PutResult{Resp: resp})
			})
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// addFlags declares the flags of put, also accepted by put requests in txn.
func (o *putOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.lease, "lease", "0", "lease ID (in hexadecimal) to attach to the key")
	f.BoolVar(&o.prevKV, "prev-kv", false, "return the previous key-value pair before modification")
	f.BoolVar(&o.ignoreValue, "ignore-value", false, "updates the key using its current value")
	f.BoolVar(&o.ignoreLease, "ignore-lease", false, "updates the key using its current lease")
}

// request checks the arguments of put and builds its request, reading the
// value from stdin when it is not an argument.
func (o *putOptions) request(args []string, stdin io.Reader) (*pb.PutRequest, error) {
	if len(args) == 0 {
		return nil, cmderr.BadArgs("put command needs 1 argument and input from stdin or 2 arguments")
	}
	if o.ignoreValue && len(args) > 1 {
		return nil, cmderr.BadArgs("put command needs only 1 argument when 'ignore-value' is set")
	}
	var value []byte
	switch {
	case len(args) > 1:
		value = []byte(args[1])
	case !o.ignoreValue:
		data, err := io.ReadAll(stdin)
		if err != nil || len(data) == 0 {
			return nil, cmderr.BadArgs("put command needs 1 argument and input from stdin or 2 arguments")
		}
		value = data
	}
	lease, err := parseLeaseID(o.lease)
	if err != nil {
		return nil, err
	}
	return &pb.PutRequest{Key: []byte(args[0]), Value: value, Lease: lease, PrevKv: o.prevKV,
		IgnoreValue: o.ignoreValue, IgnoreLease: o.ignoreLease}, nil
}

// requestOp builds the request of a put line of a transaction, whose value
// is never read from stdin: that is where the transaction is read from.
func (o *putOptions) requestOp(args []string) (*pb.RequestOp, error) {
	req, err := o.request(args, strings.NewReader(""))
	if err != nil {
		return nil, err
	}
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: req}}, nil
}

// parseLeaseID parses a lease ID in hexadecimal, as etcdctl takes them.
func parseLeaseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 16, 64)
	if err != nil {
		return 0, cmderr.BadArgs("bad lease ID (%v), expecting ID in Hex", err)
	}
	return id, nil
}

// delOptions are the flags of del.
type delOptions struct {
	prefix  bool
	fromKey bool
	prevKV  bool
	rangeOK bool // --range: accepted as etcdctl does; a range end argument makes the range
}

func newDelCommand(g *globalOptions) *cobra.Command {
	var o delOptions
	cmd := &cobra.Command{
		Use:   "del [options] <key> [range_end]",
		Short: "Removes the specified key or range of keys [key, range_end)",
		Example: `  cairn del foo
  cairn del --prefix /jobs/ --prev-kv`,
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := o.request(args)
			if err != nil {
				return err
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := c.KV.DeleteRange(ctx, req)
				if err != nil {
					return err
				}
				return g.printer(cmd).Print(&printer.DelResult{Resp: resp})
			})
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// addFlags declares the flags of del, also accepted by del requests in txn.
func (o *delOptions) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.prefix, "prefix", false, "delete keys with matching prefix")
	f.BoolVar(&o.fromKey, "from-key", false, "delete keys that are greater than or equal to the given key using byte compare")
	f.BoolVar(&o.prevKV, "prev-kv", false, "return deleted key-value pairs")
	f.BoolVar(&o.rangeOK, "range", false, "delete range of keys")
}

// request checks the arguments of del and builds its request.
func (o *delOptions) request(args []string) (*pb.DeleteRangeRequest, error) {
	key, rangeEnd, err := keyrange.Parse("del", args, o.prefix, o.fromKey)
	if err != nil {
		return nil, err
	}
	return &pb.DeleteRangeRequest{Key: key, RangeEnd: rangeEnd, PrevKv: o.prevKV}, nil
}

// requestOp builds the request of a del line of a transaction.
func (o *delOptions) requestOp(args []string) (*pb.RequestOp, error) {
	req, err := o.request(args)
	if err != nil {
		return nil, err
	}
	return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: req}}, nil
}

func newCompactionCommand(g *globalOptions) *cobra.Command {
	var physical bool
	cmd := &cobra.Command{
		Use:   "compaction [options] <revision>",
		Short: "Compacts the event history in etcd",
		Example: `  cairn compaction 1234
  cairn compaction --physical 1234`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmderr.BadArgs("compaction command needs 1 argument")
			}
			rev, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return err
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				if _, err := c.KV.Compact(ctx, &pb.CompactionRequest{Revision: rev, Physical: physical}); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "compacted revision %d\n", rev)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&physical, "physical", false, "'true' to wait for compaction to physically remove all old revisions")
	return cmd
}
