package cli

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

func newElectCommand(g *globalOptions) *cobra.Command {
	var listen bool
	cmd := &cobra.Command{
		Use:   "elect <election-name> [proposal]",
		Short: "Observes and participates in leader election",
		Long: `Observes and participates in leader election.

With a proposal, campaigns in the election named <election-name>: waits
until this process leads, prints the leader's key and the proposal, and
leads until interrupted (Ctrl-C), which resigns. With --listen, prints the
leader's key and value each time the leader (or its value) changes, until
interrupted.

The candidacy is held by a session whose lease is kept alive: if this
process dies, the next candidate leads when the lease expires. The protocol
is etcd's, so cairn and etcdctl can take part in the same election.`,
		Example: `  cairn elect my-service node-1      # campaign; prints my-service/<lease ID> and node-1 once elected
  cairn elect my-service --listen    # follow the leader`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 && len(args) != 2 {
				return cmderr.BadArgs("elect takes one election name argument and an optional proposal argument")
			}
			if listen && len(args) != 1 {
				return cmderr.BadArgs("proposal given but -l is set")
			}
			if !listen && len(args) != 2 {
				return cmderr.BadArgs("no proposal argument but -l not set")
			}
			return g.withClient(cmd, func(c *client.Client) error {
				if listen {
					return observeElection(cmd, g, c, args[0])
				}
				return campaign(cmd, g, c, args[0], args[1])
			})
		},
	}
	cmd.Flags().BoolVarP(&listen, "listen", "l", false, "observation mode")
	return cmd
}

func campaign(cmd *cobra.Command, g *globalOptions, c *client.Client, name, proposal string) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := newSession(ctx, g, c, client.DefaultSessionTTL)
	if err != nil {
		return err
	}
	defer closeSession(g, s)
	e := client.NewElection(s, name)
	if err := e.Campaign(ctx, proposal); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while waiting: the candidacy is withdrawn
		}
		return err
	}
	getCtx, cancel := g.commandContext(cmd)
	resp, err := c.KV.Range(getCtx, &pb.RangeRequest{Key: []byte(e.Key())})
	cancel()
	if err != nil {
		return err
	}
	if err := g.printer(cmd).Print(&printer.GetResult{Resp: resp}); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		resignCtx, cancel := g.commandContext(cmd)
		defer cancel()
		return e.Resign(resignCtx)
	case <-s.Done():
		return errors.New("elect: session expired")
	}
}

func observeElection(cmd *cobra.Command, g *globalOptions, c *client.Client, name string) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := g.printer(cmd)
	for resp := range c.Observe(ctx, name) {
		if err := p.Print(&printer.GetResult{Resp: resp}); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("elect: observer lost")
}
