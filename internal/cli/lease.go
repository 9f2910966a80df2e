package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// addLeaseCommands attaches lease and its subcommands.
func addLeaseCommands(root *cobra.Command, g *globalOptions) {
	lease := &cobra.Command{
		Use:   "lease <subcommand>",
		Short: "Lease related commands",
	}
	lease.AddCommand(newLeaseGrantCommand(g), newLeaseRevokeCommand(g), newLeaseTimeToLiveCommand(g),
		newLeaseListCommand(g), newLeaseKeepAliveCommand(g))
	addToGroup(root, kvGroup, lease)
}

// leaseArg parses the lease ID argument of a lease subcommand.
func leaseArg(args []string, missing string) (int64, error) {
	if len(args) != 1 {
		return 0, cmderr.BadArgs("%s", missing)
	}
	id, err := strconv.ParseInt(args[0], 16, 64)
	if err != nil {
		return 0, cmderr.BadArgs("bad lease ID arg (%v), expecting ID in Hex", err)
	}
	return id, nil
}

func newLeaseGrantCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "grant <ttl>",
		Short:   "Creates leases",
		Example: "  cairn lease grant 60\n  cairn put --lease=$(cairn lease grant 60 | cut -d' ' -f2) job running",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmderr.BadArgs("lease grant command needs TTL argument")
			}
			ttl, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return cmderr.BadArgs("bad TTL (%v)", err)
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := c.Lease.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: ttl})
				if err != nil {
					return fmt.Errorf("failed to grant lease (%w)", err)
				}
				return g.printer(cmd).Print(&printer.LeaseGrantResult{Resp: resp})
			})
		},
	}
}

func newLeaseRevokeCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "revoke <leaseID>",
		Short:   "Revokes leases",
		Example: "  cairn lease revoke 694d77aa9e2f6e0b",
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := leaseArg(args, "lease revoke command needs 1 argument")
			if err != nil {
				return err
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := c.Lease.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: id})
				if err != nil {
					return fmt.Errorf("failed to revoke lease (%w)", err)
				}
				return g.printer(cmd).Print(&printer.LeaseRevokeResult{ID: id, Resp: resp})
			})
		},
	}
}

func newLeaseTimeToLiveCommand(g *globalOptions) *cobra.Command {
	var keys bool
	cmd := &cobra.Command{
		Use:     "timetolive <leaseID> [options]",
		Short:   "Get lease information",
		Example: "  cairn lease timetolive 694d77aa9e2f6e0b --keys",
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := leaseArg(args, "lease timetolive command needs lease ID as argument")
			if err != nil {
				return err
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := c.Lease.LeaseTimeToLive(ctx, &pb.LeaseTimeToLiveRequest{ID: id, Keys: keys})
				if err != nil {
					return cmderr.WithCode(cmderr.ExitBadConnection, err)
				}
				return g.printer(cmd).Print(&printer.LeaseTimeToLiveResult{Resp: resp, Keys: keys})
			})
		},
	}
	cmd.Flags().BoolVar(&keys, "keys", false, "Get keys attached to this lease")
	return cmd
}

func newLeaseListCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List all active leases",
		Example: `  cairn lease list
  cairn lease list -w json --hex`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := c.Lease.LeaseLeases(ctx, &pb.LeaseLeasesRequest{})
				if err != nil {
					return cmderr.WithCode(cmderr.ExitBadConnection, err)
				}
				return g.printer(cmd).Print(&printer.LeaseListResult{Resp: resp})
			})
		},
	}
}

func newLeaseKeepAliveCommand(g *globalOptions) *cobra.Command {
	var once bool
	cmd := &cobra.Command{
		Use:   "keep-alive [options] <leaseID>",
		Short: "Keeps leases alive (renew)",
		Example: `  cairn lease keep-alive 694d77aa9e2f6e0b
  cairn lease keep-alive --once 694d77aa9e2f6e0b`,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := leaseArg(args, "lease keep-alive command needs lease ID as argument")
			if err != nil {
				return err
			}
			return g.withClient(cmd, func(c *client.Client) error {
				p := g.printer(cmd)
				if once {
					ctx, cancel := g.commandContext(cmd)
					defer cancel()
					resp, err := c.KeepAliveOnce(ctx, id)
					if err != nil {
						return cmderr.WithCode(cmderr.ExitBadConnection, err)
					}
					return p.Print(&printer.LeaseKeepAliveResult{Resp: resp})
				}
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				return keepAlive(ctx, c, id, p)
			})
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "Resets the keep-alive time to its original value and exits immediately")
	return cmd
}

// keepAlive renews the lease until ctx is done, printing each renewal, and
// says so if the lease goes away.
func keepAlive(ctx context.Context, c *client.Client, id int64, p *printer.Printer) error {
	for resp := range c.KeepAlive(ctx, id) {
		if err := p.Print(&printer.LeaseKeepAliveResult{Resp: resp}); err != nil {
			return err
		}
	}
	if ctx.Err() == nil {
		fmt.Fprintf(p.Writer(), "lease %016x expired or revoked.\n", id)
	}
	return nil
}
