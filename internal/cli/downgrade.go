package cli

import (
	"github.com/spf13/cobra"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// addDowngradeCommands attaches downgrade validate, enable and cancel.
func addDowngradeCommands(root *cobra.Command, g *globalOptions) {
	downgrade := &cobra.Command{
		Use:   "downgrade <subcommand>",
		Short: "Downgrade related commands",
		Example: `  cairn downgrade validate 3.6
  cairn downgrade enable 3.6
  # once every member shows storage version 3.6.0, stop them and start etcd 3.6 on their data dirs
  cairn endpoint status --cluster -w table
  # or give up: the cluster version goes back to 3.7
  cairn downgrade cancel`,
	}
	downgrade.AddCommand(
		newDowngradeCommand(g, "validate", "Validate downgrade capability before starting downgrade", pb.DowngradeRequest_VALIDATE,
			`  # Check that the cluster can be downgraded to etcd 3.6
  cairn downgrade validate 3.6`),
		newDowngradeCommand(g, "enable", "Start a downgrade action to cluster", pb.DowngradeRequest_ENABLE,
			`  # Lower the cluster version to 3.6, so that etcd 3.6 members can replace the members one by one
  cairn downgrade enable 3.6`),
		newDowngradeCommand(g, "cancel", "Cancel the ongoing downgrade action to cluster", pb.DowngradeRequest_CANCEL,
			`  # Give up the downgrade: the cluster version goes back up
  cairn downgrade cancel`),
	)
	addToGroup(root, maintenanceGroup, downgrade)
}

// newDowngradeCommand builds one downgrade subcommand. validate and enable
// take the target version; cancel ignores its arguments, as etcdctl does.
func newDowngradeCommand(g *globalOptions, name, short string, action pb.DowngradeRequest_DowngradeAction, example string) *cobra.Command {
	use := name + " <TARGET_VERSION>"
	if action == pb.DowngradeRequest_CANCEL {
		use = name
	}
	return &cobra.Command{
		Use:     use,
		Short:   short,
		Example: example,
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &pb.DowngradeRequest{Action: action}
			if action != pb.DowngradeRequest_CANCEL {
				switch {
				case len(args) == 0:
					return cmderr.BadArgs("TARGET_VERSION not provided")
				case len(args) > 1:
					return cmderr.BadArgs("too many arguments")
				case args[0] == "":
					return cmderr.BadArgs("target version not provided")
				}
				req.Version = args[0]
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := c.Maintenance.Downgrade(ctx, req)
				if err != nil {
					return err
				}
				return g.printer(cmd).Print(&printer.DowngradeResult{Action: name, Resp: resp})
			})
		},
	}
}
