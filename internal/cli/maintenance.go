package cli

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
	"github.com/cairnkv/cairn/internal/cliutil/progress"
	"github.com/cairnkv/cairn/internal/cliutil/term"
	"github.com/cairnkv/cairn/pkg/snapfmt"
	"github.com/cairnkv/cairn/pkg/writebehind"
)

// addMaintenanceCommands attaches alarm, defrag, snapshot save and
// move-leader.
func addMaintenanceCommands(root *cobra.Command, g *globalOptions) {
	alarm := &cobra.Command{
		Use:   "alarm <subcommand>",
		Short: "Alarm related commands",
	}
	alarm.AddCommand(newAlarmListCommand(g), newAlarmDisarmCommand(g))
	snapshot := subcommandGroup(root, "snapshot", "Manages etcd node snapshots")
	snapshot.AddCommand(newSnapshotSaveCommand(g))
	addToGroup(root, maintenanceGroup, alarm, newDefragCommand(g), newMoveLeaderCommand(g), snapshot)
}

// subcommandGroup returns root's child command called name, creating it if
// needed, so that command groups shared with other files (snapshot) are
// built in any order.
func subcommandGroup(root *cobra.Command, name, short string) *cobra.Command {
	for _, c := range root.Commands() {
		if c.Name() == name {
			return c
		}
	}
	group := &cobra.Command{Use: name + " <subcommand>", Short: short}
	root.AddCommand(group)
	return group
}

func newAlarmListCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "Lists all alarms",
		Example: `  cairn alarm list
  cairn alarm list -w table --endpoints=$ALL_MEMBERS`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				return cmderr.BadArgs("alarm list command accepts no arguments")
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := c.Maintenance.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_GET})
				if err != nil {
					return err
				}
				return g.printer(cmd).Print(&printer.AlarmResult{Resp: resp})
			})
		},
	}
}

func newAlarmDisarmCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "disarm",
		Short:   "Disarms all alarms",
		Example: "  cairn alarm disarm   # after freeing space (compaction, defrag) to clear NOSPACE",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				return cmderr.BadArgs("alarm disarm command accepts no arguments")
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := disarmAll(ctx, c)
				if err != nil {
					return err
				}
				return g.printer(cmd).Print(&printer.AlarmResult{Resp: resp})
			})
		},
	}
}

// disarmAll deactivates every raised alarm and returns the response to the
// last deactivation (an empty response when there was no alarm).
func disarmAll(ctx context.Context, c *client.Client) (*pb.AlarmResponse, error) {
	list, err := c.Maintenance.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_GET})
	if err != nil {
		return nil, err
	}
	resp := &pb.AlarmResponse{}
	for _, a := range list.GetAlarms() {
		resp, err = c.Maintenance.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_DEACTIVATE,
			MemberID: a.GetMemberID(), Alarm: a.GetAlarm()})
		if err != nil {
			return nil, err
		}
	}
	return resp, nil
}

func newDefragCommand(g *globalOptions) *cobra.Command {
	var cluster bool
	cmd := &cobra.Command{
		Use:   "defrag",
		Short: "Defragments the storage of the etcd members with given endpoints",
		Example: `  cairn defrag
  cairn defrag --cluster`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withClient(cmd, func(c *client.Client) error {
				eps, _, err := targetEndpoints(cmd, g, c, cluster)
				if err != nil {
					return err
				}
				failed := false
				for _, ep := range eps {
					if !defragment(cmd, g, c, ep) {
						failed = true
					}
				}
				if failed {
					return cmderr.ErrSilent
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&cluster, "cluster", false, "use all endpoints from the cluster member list")
	return cmd
}

// defragment defragments one member, online, and reports how it went.
func defragment(cmd *cobra.Command, g *globalOptions, c *client.Client, ep string) bool {
	conn, err := c.ForEndpoint(ep)
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "Failed to defragment etcd member[%s]. took 0s. (%v)\n", ep, err)
		return false
	}
	ctx, cancel := g.commandContext(cmd)
	defer cancel()
	start := time.Now()
	_, err = pb.NewMaintenanceClient(conn).Defragment(ctx, &pb.DefragmentRequest{})
	took := time.Since(start)
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "Failed to defragment etcd member[%s]. took %s. (%v)\n", ep, took, err)
		return false
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Finished defragmenting etcd member[%s]. took %s\n", ep, took)
	return true
}

func newSnapshotSaveCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "save <filename>",
		Short: "Stores an etcd node backend snapshot to a given file",
		Example: `  # Save snapshot to a given file
  cairn snapshot save /backup/etcd-snapshot.db

  # Get snapshot from given address with certificates
  cairn --endpoints=https://127.0.0.1:2379 --cacert=/etc/etcd/ca.crt --cert=/etc/etcd/etcd.crt --key=/etc/etcd/etcd.key snapshot save /backup/etcd-snapshot.db`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmderr.BadArgs("snapshot save expects one argument <filename>")
			}
			if eps := g.endpoints(); len(eps) != 1 {
				return cmderr.BadArgs("snapshot must be requested to one selected node, not multiple %v", eps)
			}
			return g.withClient(cmd, func(c *client.Client) error {
				// The transfer of a large database may take long: the dial
				// timeout bounds connecting, nothing bounds the download.
				// The progress and the summary are for a terminal: on a
				// pipe, stderr stays as etcdctl's.
				prog := progress.ForCommand(cmd, "snapshot save", 0, false)
				saved, err := saveSnapshot(cmd.Context(), c, args[0], prog)
				prog.Finish()
				if err != nil {
					return cmderr.WithCode(cmderr.ExitInterrupted, err)
				}
				if term.IsTerminal(cmd.ErrOrStderr()) {
					fmt.Fprintln(cmd.ErrOrStderr(), saved)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Snapshot saved at %s\n", args[0])
				if saved.version != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "Server version %s\n", saved.version)
				}
				return nil
			})
		},
	}
}

// savedSnapshot is what snapshot save received.
type savedSnapshot struct {
	version string        // the member's storage version
	size    int64         // bytes of the file, the sha256 trailer included
	took    time.Duration // from the request to the file in place
	sha256  []byte        // of the file, as sha256sum shows it
}

// String is the summary line: "Snapshot of 22 MB (21999648 bytes) saved in
// 1.2s (18 MB/s), sha256 9f86d0...".
func (s savedSnapshot) String() string {
	return fmt.Sprintf("Snapshot of %s (%d bytes) saved in %s (%s), sha256 %x",
		printer.HumanBytes(s.size), s.size, s.took.Round(time.Millisecond), progress.Rate(s.size, s.took), s.sha256)
}

// saveSnapshot streams the member's database into path: first into
// path.part, synced as it is written, checked against the sha256 the
// server appends, then renamed into place. It reports the bytes received
// on prog, of the total that the stream announces (each message says how
// many bytes remain).
func saveSnapshot(ctx context.Context, c *client.Client, path string, prog *progress.Bytes) (savedSnapshot, error) {
	start := time.Now()
	var saved savedSnapshot
	part := path + ".part"
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return saved, fmt.Errorf("could not open %s (%v)", part, err)
	}
	defer os.Remove(part) // no-op after the rename
	defer f.Close()

	stream, err := c.Maintenance.Snapshot(ctx, &pb.SnapshotRequest{})
	if err != nil {
		return saved, err
	}
	out := writebehind.New(f, writebehind.DefaultInterval, false)
	defer out.Close()
	check := snapfmt.NewTrailerCheck()
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return saved, err
		}
		if v := resp.GetVersion(); v != "" {
			saved.version = v
		}
		blob := resp.GetBlob()
		if _, err := out.Write(blob); err != nil {
			return saved, err
		}
		check.Write(blob)
		saved.size += int64(len(blob))
		total := saved.size
		if r := resp.GetRemainingBytes(); r > 0 {
			total += int64(r) + sha256.Size
		}
		prog.UpdateOf(saved.size, total)
	}
	if !check.Valid() {
		return saved, errors.New("snapshot is corrupt: its sha256 does not match its content")
	}
	if err := out.Close(); err != nil {
		return saved, err
	}
	if err := f.Close(); err != nil {
		return saved, err
	}
	if err := os.Rename(part, path); err != nil {
		return saved, err
	}
	saved.took, saved.sha256 = time.Since(start), check.FileSum()
	return saved, nil
}

func newMoveLeaderCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "move-leader <transferee-member-id>",
		Short:   "Transfers leadership to another etcd cluster member.",
		Example: "  cairn move-leader 8e9e05c52164694d --endpoints=$ALL_MEMBERS",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmderr.BadArgs("move-leader command needs 1 argument")
			}
			target, err := strconv.ParseUint(args[0], 16, 64)
			if err != nil {
				return cmderr.BadArgs("%v", err)
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				leader, leaderConn, err := findLeader(ctx, c)
				if err != nil {
					return err
				}
				resp, err := pb.NewMaintenanceClient(leaderConn).MoveLeader(ctx, &pb.MoveLeaderRequest{TargetID: target})
				if err != nil {
					return err
				}
				return g.printer(cmd).Print(&printer.MoveLeaderResult{From: leader, To: target, Resp: resp})
			})
		},
	}
}

// findLeader asks each endpoint for its status and returns the ID of the
// leader and a connection to it; the leader must be among the endpoints.
func findLeader(ctx context.Context, c *client.Client) (uint64, grpc.ClientConnInterface, error) {
	for _, ep := range c.Endpoints() {
		conn, err := c.ForEndpoint(ep)
		if err != nil {
			return 0, nil, err
		}
		resp, err := pb.NewMaintenanceClient(conn).Status(ctx, &pb.StatusRequest{})
		if err != nil {
			return 0, nil, err
		}
		if id := resp.GetHeader().GetMemberId(); id == resp.GetLeader() {
			return id, conn, nil
		}
	}
	return 0, nil, cmderr.BadArgs("no leader endpoint given at %v", c.Endpoints())
}
