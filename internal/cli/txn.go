package cli

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

func newTxnCommand(g *globalOptions) *cobra.Command {
	var interactive bool
	cmd := &cobra.Command{
		Use:   "txn [options]",
		Short: "Txn processes all the requests in one transaction",
		Long: `Txn reads multiple etcd requests from standard input and applies them as a single atomic transaction.

A transaction consists of three components:
1) a list of conditions,
2) a list of requests to apply if all the conditions are true,
3) a list of requests to apply if any condition is false.

Each list ends with an empty line. A condition is one of
  c("key") <op> "<create revision>"     (or create)
  m("key") <op> "<mod revision>"        (or mod)
  ver("key") <op> "<version>"           (or version)
  val("key") <op> "<value>"             (or value)
  lease("key") <op> "<lease ID in hex>"
where <op> is =, !=, < or >. A request is a get, put or del command line
with its flags, such as: put key1 "overwrote-key1" --prev-kv`,
		Example: `  cairn txn -i
  # compares:
  mod("key1") > "0"

  # success requests (get, put, delete):
  put key1 "overwrote-key1"

  # failure requests (get, put, delete):
  put key1 "created-key1"
  put key2 "some extra key"

  printf 'value("k") = "v"\n\nput k w\n\nget k\n\n' | cairn txn`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				return cmderr.BadArgs("txn command does not accept argument")
			}
			var prompts io.Writer = io.Discard
			if interactive {
				prompts = cmd.OutOrStdout()
			}
			req, err := readTxn(bufio.NewReader(cmd.InOrStdin()), prompts)
			if err != nil {
				return err
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := c.KV.Txn(ctx, req)
				if err != nil {
					return err
				}
				return g.printer(cmd).Print(&printer.TxnResult{Resp: resp})
			})
		},
	}
	cmd.Flags().BoolVarP(&interactive, "interactive", "i", false, "Input transaction in interactive mode")
	return cmd
}

// readTxn reads the three sections of a transaction, each ended by an
// empty line, writing a prompt before each to prompts.
func readTxn(in *bufio.Reader, prompts io.Writer) (*pb.TxnRequest, error) {
	req := &pb.TxnRequest{}
	fmt.Fprintln(prompts, "compares:")
	err := readSection(in, func(line string) error {
		cmp, err := parseCompare(line)
		req.Compare = append(req.Compare, cmp)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, branch := range []struct {
		prompt string
		ops    *[]*pb.RequestOp
	}{
		{"success requests (get, put, del):", &req.Success},
		{"failure requests (get, put, del):", &req.Failure},
	} {
		fmt.Fprintln(prompts, branch.prompt)
		err := readSection(in, func(line string) error {
			op, err := parseRequestOp(line)
			*branch.ops = append(*branch.ops, op)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return req, nil
}

// readSection passes each line to f until an empty line. Input that ends
// before the empty line is an error.
func readSection(in *bufio.Reader, f func(line string) error) error {
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return cmderr.InvalidInput(err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			return nil
		}
		if err := f(line); err != nil {
			return err
		}
	}
}

var (
	compareTargets = map[string]pb.Compare_CompareTarget{
		"c": pb.Compare_CREATE, "create": pb.Compare_CREATE,
		"m": pb.Compare_MOD, "mod": pb.Compare_MOD,
		"ver": pb.Compare_VERSION, "version": pb.Compare_VERSION,
		"val": pb.Compare_VALUE, "value": pb.Compare_VALUE,
		"lease": pb.Compare_LEASE,
	}
	compareResults = map[string]pb.Compare_CompareResult{
		"=": pb.Compare_EQUAL, "!=": pb.Compare_NOT_EQUAL, ">": pb.Compare_GREATER, "<": pb.Compare_LESS,
	}
)

// compareParts is a comparison line cut into its parts: target("key") op "value".
type compareParts struct {
	target, key, op, value string
}

func (c compareParts) String() string {
	return fmt.Sprintf("%s(%q) %s %q", c.target, c.key, c.op, c.value)
}

// splitCompare cuts a comparison line into its parts. On a malformed line
// it returns the parts it could read, for the error message.
func splitCompare(line string) (compareParts, bool) {
	var c compareParts
	rest := strings.TrimLeftFunc(line, unicode.IsSpace)
	target, rest, found := strings.Cut(rest, "(")
	if !found {
		c.target = strings.Fields(target + " ")[0]
		return c, false
	}
	c.target = target
	quotedKey, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return c, false
	}
	key, _ := strconv.Unquote(quotedKey)
	rest, ok := strings.CutPrefix(rest[len(quotedKey):], ") ")
	if !ok {
		c.key = key
		return c, false
	}
	c.key = key
	rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
	op, rest, _ := strings.Cut(rest, " ")
	c.op = op
	rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
	quotedValue, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return c, false
	}
	c.value, _ = strconv.Unquote(quotedValue)
	return c, true
}

// parseCompare parses one comparison, such as mod("key") > "3".
func parseCompare(line string) (*pb.Compare, error) {
	parts, ok := splitCompare(line)
	if !ok {
		return nil, cmderr.InvalidInput(fmt.Errorf("malformed comparison: %s; got %v", line, parts))
	}
	target, ok := compareTargets[parts.target]
	if !ok {
		return nil, cmderr.InvalidInput(fmt.Errorf("malformed comparison: %s (unknown target %s)", line, parts.target))
	}
	result, ok := compareResults[parts.op]
	if !ok {
		return nil, cmderr.InvalidInput(fmt.Errorf("malformed comparison: %s (unknown operator %s)", line, parts.op))
	}
	cmp := &pb.Compare{Key: []byte(parts.key), Target: target, Result: result}
	invalid := cmderr.InvalidInput(fmt.Errorf("invalid txn compare request: %s", line))
	switch target {
	case pb.Compare_VALUE:
		cmp.TargetUnion = &pb.Compare_Value{Value: []byte(parts.value)}
	case pb.Compare_LEASE:
		id, err := strconv.ParseInt(parts.value, 16, 64)
		if err != nil {
			return nil, invalid
		}
		cmp.TargetUnion = &pb.Compare_Lease{Lease: id}
	default:
		n, err := strconv.ParseInt(parts.value, 10, 64)
		if err != nil {
			return nil, invalid
		}
		switch target {
		case pb.Compare_CREATE:
			cmp.TargetUnion = &pb.Compare_CreateRevision{CreateRevision: n}
		case pb.Compare_MOD:
			cmp.TargetUnion = &pb.Compare_ModRevision{ModRevision: n}
		case pb.Compare_VERSION:
			cmp.TargetUnion = &pb.Compare_Version{Version: n}
		}
	}
	return cmp, nil
}

// txnRequestOptions are the flags of a command that a transaction's request
// lines may hold (get, put, del), which then build that request.
type txnRequestOptions interface {
	addFlags(f *pflag.FlagSet)
	requestOp(args []string) (*pb.RequestOp, error)
}

// parseRequestOp parses one request of a transaction: a get, put or del
// command line with the flags of those commands.
func parseRequestOp(line string) (*pb.RequestOp, error) {
	args := splitArgs(line)
	if len(args) < 2 {
		return nil, cmderr.InvalidInput(fmt.Errorf("invalid txn compare request: %s", line))
	}
	invalid := cmderr.InvalidInput(fmt.Errorf("invalid txn request: %s", line))
	var o txnRequestOptions
	switch args[0] {
	case "get":
		o = &getOptions{}
	case "put":
		o = &putOptions{}
	case "del", "delete":
		o = &delOptions{}
	default:
		return nil, invalid
	}
	flags := pflag.NewFlagSet(args[0], pflag.ContinueOnError)
	flags.SetOutput(io.Discard)
	o.addFlags(flags)
	if flags.Parse(args[1:]) != nil {
		return nil, invalid
	}
	return o.requestOp(flags.Args())
}

// splitArgs splits a request line into arguments: words separated by
// spaces, "double-quoted" strings with Go escapes, or 'single-quoted'
// strings taken literally.
func splitArgs(line string) []string {
	var args []string
	rest := strings.TrimSpace(line)
	for rest != "" {
		var arg string
		arg, rest = nextArg(rest)
		args = append(args, arg)
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
	}
	return args
}

// nextArg returns the first argument of s and what follows it.
func nextArg(s string) (arg, rest string) {
	switch s[0] {
	case '"':
		if quoted, err := strconv.QuotedPrefix(s); err == nil {
			arg, _ = strconv.Unquote(quoted)
			return arg, s[len(quoted):]
		}
		return s[1:], ""
	case '\'':
		if end := strings.IndexByte(s[1:], '\''); end >= 0 {
			return s[1 : end+1], s[end+2:]
		}
		return s[1:], ""
	}
	if end := strings.IndexFunc(s, unicode.IsSpace); end >= 0 {
		return s[:end], s[end:]
	}
	return s, ""
}
