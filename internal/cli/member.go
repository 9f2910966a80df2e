package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// addMemberCommands attaches member and its subcommands.
func addMemberCommands(root *cobra.Command, g *globalOptions) {
	member := &cobra.Command{
		Use:   "member <subcommand>",
		Short: "Membership related commands",
	}
	member.AddCommand(newMemberAddCommand(g), newMemberRemoveCommand(g), newMemberUpdateCommand(g),
		newMemberListCommand(g), newMemberPromoteCommand(g))
	addToGroup(root, maintenanceGroup, member)
}

// memberIDArg parses the member ID argument, in hexadecimal.
func memberIDArg(args []string) (uint64, error) {
	if len(args) != 1 {
		return 0, cmderr.BadArgs("member ID is not provided")
	}
	id, err := strconv.ParseUint(args[0], 16, 64)
	if err != nil {
		return 0, cmderr.BadArgs("bad member ID arg (%v), expecting ID in Hex", err)
	}
	return id, nil
}

// peerURLsFlag splits the comma-separated --peer-urls of member add and
// update, which must not be empty.
func peerURLsFlag(s string) ([]string, error) {
	if s == "" {
		return nil, cmderr.BadArgs("member peer urls not provided")
	}
	return strings.Split(s, ","), nil
}

func newMemberAddCommand(g *globalOptions) *cobra.Command {
	var peerURLs string
	var learner bool
	cmd := &cobra.Command{
		Use:   "add <memberName> [options]",
		Short: "Adds a member into the cluster",
		Example: `  cairn member add m4 --peer-urls=http://10.0.0.4:2380
  cairn member add m4 --peer-urls=http://10.0.0.4:2380 --learner`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return cmderr.BadArgs("member name not provided")
			}
			if len(args) > 1 {
				msg := "too many arguments"
				for _, arg := range args[1:] {
					if strings.HasPrefix(arg, "http") {
						msg += ", did you mean --peer-urls=" + arg
					}
				}
				return cmderr.BadArgs("%s", msg)
			}
			urls, err := peerURLsFlag(peerURLs)
			if err != nil {
				return err
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := c.Cluster.MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: urls, IsLearner: learner})
				if err != nil {
					return err
				}
				return g.printer(cmd).Print(&printer.MemberAddResult{Resp: resp, Name: args[0]})
			})
		},
	}
	cmd.Flags().StringVar(&peerURLs, "peer-urls", "", "comma separated peer URLs for the new member.")
	cmd.Flags().BoolVar(&learner, "learner", false, "indicates if the new member is raft learner")
	return cmd
}

func newMemberRemoveCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "remove <memberID>",
		Short:   "Removes a member from the cluster",
		Example: "  cairn member remove 8e9e05c52164694d",
		RunE: runMemberIDCommand(g, "removed from", func(ctx context.Context, cluster pb.ClusterClient, id uint64) (printer.MemberChangeResponse, error) {
			return cluster.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: id})
		}),
	}
}

func newMemberUpdateCommand(g *globalOptions) *cobra.Command {
	var peerURLs string
	cmd := &cobra.Command{
		Use:     "update <memberID> [options]",
		Short:   "Updates a member in the cluster",
		Example: "  cairn member update 8e9e05c52164694d --peer-urls=http://10.0.0.1:2380",
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := memberIDArg(args)
			if err != nil {
				return err
			}
			urls, err := peerURLsFlag(peerURLs)
			if err != nil {
				return err
			}
			return changeMember(cmd, g, id, "updated in", func(ctx context.Context, cluster pb.ClusterClient) (printer.MemberChangeResponse, error) {
				return cluster.MemberUpdate(ctx, &pb.MemberUpdateRequest{ID: id, PeerURLs: urls})
			})
		},
	}
	cmd.Flags().StringVar(&peerURLs, "peer-urls", "", "comma separated peer URLs for the updated member.")
	return cmd
}

func newMemberPromoteCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "promote <memberID>",
		Short:   "Promotes a non-voting learner member to a voting one in the cluster.",
		Example: "  cairn member promote 8e9e05c52164694d",
		RunE: runMemberIDCommand(g, "promoted in", func(ctx context.Context, cluster pb.ClusterClient, id uint64) (printer.MemberChangeResponse, error) {
			return cluster.MemberPromote(ctx, &pb.MemberPromoteRequest{ID: id})
		}),
	}
}

// runMemberIDCommand is the RunE of a member command whose one argument is
// the member ID (remove, promote): see changeMember.
func runMemberIDCommand(g *globalOptions, verb string,
	send func(ctx context.Context, cluster pb.ClusterClient, id uint64) (printer.MemberChangeResponse, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		id, err := memberIDArg(args)
		if err != nil {
			return err
		}
		return changeMember(cmd, g, id, verb, func(ctx context.Context, cluster pb.ClusterClient) (printer.MemberChangeResponse, error) {
			return send(ctx, cluster, id)
		})
	}
}

// changeMember sends the request of member remove, update or promote for
// member id, once its arguments are checked, and prints the outcome:
// "Member <id> <verb> cluster <cluster ID>", or the members after it.
func changeMember(cmd *cobra.Command, g *globalOptions, id uint64, verb string,
	send func(ctx context.Context, cluster pb.ClusterClient) (printer.MemberChangeResponse, error)) error {
	return g.withClient(cmd, func(c *client.Client) error {
		ctx, cancel := g.commandContext(cmd)
		defer cancel()
		resp, err := send(ctx, c.Cluster)
		if err != nil {
			return err
		}
		return g.printer(cmd).Print(&printer.MemberChangeResult{ID: id, Verb: verb, Resp: resp})
	})
}

func newMemberListCommand(g *globalOptions) *cobra.Command {
	var consistency string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Lists all members in the cluster",
		Long: `When --write-out is set to simple, this command prints out comma-separated member lists for each endpoint.
The items in the lists are ID, Status, Name, Peer Addrs, Client Addrs, Is Learner.`,
		Example: "  cairn member list -w table",
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &pb.MemberListRequest{}
			switch consistency {
			case "l":
				req.Linearizable = true
			case "s":
			default:
				return cmderr.WithCode(cmderr.ExitBadFeature, fmt.Errorf("unknown consistency flag %q", consistency))
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := c.Cluster.MemberList(ctx, req)
				if err != nil {
					return err
				}
				return g.printer(cmd).Print(&printer.MemberListResult{Resp: resp})
			})
		},
	}
	cmd.Flags().StringVar(&consistency, "consistency", "l", "Linearizable(l) or Serializable(s)")
	return cmd
}
