package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/metrics"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// addEndpointCommands attaches endpoint and its subcommands.
func addEndpointCommands(root *cobra.Command, g *globalOptions) {
	endpoint := &cobra.Command{
		Use:   "endpoint <subcommand>",
		Short: "Endpoint related commands",
	}
	var cluster bool
	endpoint.PersistentFlags().BoolVar(&cluster, "cluster", false, "use all endpoints from the cluster member list")
	endpoint.AddCommand(newEndpointHealthCommand(g, &cluster), newEndpointStatusCommand(g, &cluster),
		newEndpointHashKVCommand(g, &cluster))
	addToGroup(root, maintenanceGroup, endpoint)
}

// targetEndpoints returns the endpoints a per-member command addresses:
// those of the global flags, or with --cluster the client URLs of every
// member, which then become the client's endpoints, and the member of each.
func targetEndpoints(cmd *cobra.Command, g *globalOptions, c *client.Client, cluster bool) ([]string, map[string]*pb.Member, error) {
	if !cluster {
		return c.Endpoints(), nil, nil
	}
	ctx, cancel := g.commandContext(cmd)
	defer cancel()
	resp, err := c.Cluster.MemberList(ctx, &pb.MemberListRequest{Linearizable: true})
	if err != nil {
		return nil, nil, fmt.Errorf("failed to fetch endpoints from etcd cluster member list: %w", err)
	}
	var eps []string
	members := map[string]*pb.Member{}
	for _, m := range resp.GetMembers() {
		eps = append(eps, m.GetClientURLs()...)
		for _, u := range m.GetClientURLs() {
			members[u] = m
		}
	}
	if err := c.SetEndpoints(eps...); err != nil {
		return nil, nil, err
	}
	return eps, members, nil
}

// forEachEndpoint runs f on every endpoint concurrently, each with its own
// command timeout, and returns the results in the order of eps.
func forEachEndpoint[T any](cmd *cobra.Command, g *globalOptions, c *client.Client, eps []string,
	f func(ctx context.Context, ep string, conn grpc.ClientConnInterface) T) ([]T, error) {
	conns := make([]grpc.ClientConnInterface, len(eps))
	for i, ep := range eps {
		conn, err := c.ForEndpoint(ep)
		if err != nil {
			return nil, err
		}
		conns[i] = conn
	}
	results := make([]T, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() {
			ctx, cancel := g.commandContext(cmd)
			defer cancel()
			results[i] = f(ctx, ep, conns[i])
		})
	}
	wg.Wait()
	return results, nil
}

func newEndpointHealthCommand(g *globalOptions, cluster *bool) *cobra.Command {
	return &cobra.Command{
		Use:   "health",
		Short: "Checks the healthiness of endpoints specified in `--endpoints` flag",
		Example: `  cairn endpoint health
  cairn endpoint health --cluster -w table`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withClient(cmd, func(c *client.Client) error {
				eps, _, err := targetEndpoints(cmd, g, c, *cluster)
				if err != nil {
					return err
				}
				health, err := forEachEndpoint(cmd, g, c, eps, checkHealth)
				if err != nil {
					return err
				}
				if err := g.printer(cmd).Print(&printer.EndpointHealthResult{Health: health, Stderr: cmd.ErrOrStderr()}); err != nil {
					return err
				}
				for _, h := range health {
					if !h.Health {
						return errors.New("unhealthy cluster")
					}
				}
				return nil
			})
		},
	}
}

// checkHealth reads a key through the member, which succeeds only when the
// cluster has a quorum behind it, and checks that no alarm is raised.
func checkHealth(ctx context.Context, ep string, conn grpc.ClientConnInterface) printer.EndpointHealth {
	h := printer.EndpointHealth{Endpoint: ep}
	start := time.Now()
	_, err := pb.NewKVClient(conn).Range(ctx, &pb.RangeRequest{Key: []byte("health")})
	// A member that checks permissions is answering: that is health enough.
	h.Health = err == nil || errors.Is(err, rpctypes.ErrPermissionDenied)
	if !h.Health {
		h.Error = err.Error()
	}
	if h.Health {
		resp, err := pb.NewMaintenanceClient(conn).Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_GET})
		switch {
		case err != nil:
			h.Health, h.Error = false, "Unable to fetch the alarm list"
		case len(resp.GetAlarms()) > 0:
			h.Health, h.Error = false, "Active Alarm(s): "
			for _, a := range resp.GetAlarms() {
				switch a.GetAlarm() {
				case pb.AlarmType_NOSPACE, pb.AlarmType_CORRUPT:
					h.Error += a.GetAlarm().String() + " "
				default:
					h.Error += "UNKNOWN "
				}
			}
		}
	}
	h.Took = time.Since(start).String()
	return h
}

func newEndpointStatusCommand(g *globalOptions, cluster *bool) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Prints out the status of endpoints specified in `--endpoints` flag",
		Long: `When --write-out is set to simple, this command prints out comma-separated status lists for each endpoint.
The items in the lists are endpoint, ID, version, db size, is leader, is learner, raft term, raft index, raft applied index, errors.

With --cluster, when some members do not answer, cairn says on stderr which ones (name, ID,
endpoint) and, when a member that answered is cairn's, since when it has had no message stream
from each (from that member's /metrics).`,
		Example: "  cairn endpoint status --cluster -w table",
		RunE: func(cmd *cobra.Command, args []string) error {
			// As etcdctl, status fails without a message of its own.
			return printEachEndpoint(cmd, g, *cluster, "status", askStatus,
				func(statuses []*printer.EndpointStatus) any { return &printer.EndpointStatusResult{Statuses: statuses} },
				func(error) error { return cmderr.ErrSilent })
		},
	}
}

// askStatus asks an endpoint for its status.
func askStatus(ctx context.Context, ep string, conn grpc.ClientConnInterface) (*printer.EndpointStatus, error) {
	resp, err := pb.NewMaintenanceClient(conn).Status(ctx, &pb.StatusRequest{})
	return &printer.EndpointStatus{Endpoint: ep, Status: resp}, err
}

func newEndpointHashKVCommand(g *globalOptions, cluster *bool) *cobra.Command {
	var rev int64
	cmd := &cobra.Command{
		Use:     "hashkv",
		Short:   "Prints the KV history hash for each endpoint in --endpoints",
		Example: "  cairn endpoint hashkv --cluster --rev 1000",
		RunE: func(cmd *cobra.Command, args []string) error {
			return printEachEndpoint(cmd, g, *cluster, "hash", askHashKV(rev),
				func(hashes []*printer.EndpointHashKV) any { return &printer.EndpointHashKVResult{Hashes: hashes} },
				func(last error) error { return last })
		},
	}
	cmd.Flags().Int64Var(&rev, "rev", 0, "maximum revision to hash (default: latest revision)")
	return cmd
}

// askHashKV returns the question for an endpoint's hash at revision rev.
func askHashKV(rev int64) func(ctx context.Context, ep string, conn grpc.ClientConnInterface) (*printer.EndpointHashKV, error) {
	return func(ctx context.Context, ep string, conn grpc.ClientConnInterface) (*printer.EndpointHashKV, error) {
		resp, err := pb.NewMaintenanceClient(conn).HashKV(ctx, &pb.HashKVRequest{Revision: rev})
		return &printer.EndpointHashKV{Endpoint: ep, HashKV: resp}, err
	}
}

// printEachEndpoint is endpoint status and hashkv: it asks every target
// endpoint at once and prints the answers with result. As etcdctl, an
// endpoint whose ask fails is reported on stderr ("Failed to get the <what>
// of endpoint ...") and left out; the command then fails with
// failure(the last error). With --cluster, cairn then says on stderr which
// members did not answer (silentMembers).
func printEachEndpoint[T any](cmd *cobra.Command, g *globalOptions, cluster bool, what string,
	ask func(ctx context.Context, ep string, conn grpc.ClientConnInterface) (*T, error),
	result func(answers []*T) any, failure func(last error) error) error {
	return g.withClient(cmd, func(c *client.Client) error {
		eps, members, err := targetEndpoints(cmd, g, c, cluster)
		if err != nil {
			return err
		}
		var (
			mu     sync.Mutex
			last   error
			failed = map[string]bool{}
		)
		answers, err := forEachEndpoint(cmd, g, c, eps, func(ctx context.Context, ep string, conn grpc.ClientConnInterface) *T {
			answer, err := ask(ctx, ep, conn)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "Failed to get the %s of endpoint %s (%v)\n", what, ep, err)
				mu.Lock()
				last, failed[ep] = err, true
				mu.Unlock()
				return nil
			}
			return answer
		})
		if err != nil {
			return err
		}
		if err := g.printer(cmd).Print(result(withoutNil(answers))); err != nil {
			return err
		}
		if cluster && len(failed) > 0 {
			fmt.Fprint(cmd.ErrOrStderr(), silentMembersText(silentMembers(cmd, g, eps, failed, members), len(eps), time.Now()))
		}
		if last != nil {
			return failure(last)
		}
		return nil
	})
}

// withoutNil drops the nil entries of s.
func withoutNil[T any](s []*T) []*T {
	var out []*T
	for _, v := range s {
		if v != nil {
			out = append(out, v)
		}
	}
	return out
}

// silentMember is a member whose endpoint did not answer, and what a member
// that answered knows of it.
type silentMember struct {
	member   *pb.Member
	endpoint string
	// since is when the member seenBy last had a message stream from it
	// open (or came to know it); zero if no member that answered says.
	since  time.Time
	seenBy *pb.Member
}

// silentMembers returns the members of the endpoints that failed, in the
// order of eps, with since when the first member that answered and exposes
// it (cairn's InactivePeersMetric; etcd's members do not) has not heard
// from each.
func silentMembers(cmd *cobra.Command, g *globalOptions, eps []string, failed map[string]bool, members map[string]*pb.Member) []silentMember {
	var silent []silentMember
	var answered []string
	for _, ep := range eps {
		if failed[ep] {
			silent = append(silent, silentMember{member: members[ep], endpoint: ep})
		} else {
			answered = append(answered, ep)
		}
	}
	tlsCfg, err := g.tlsConfig()
	if err != nil {
		return silent
	}
	for _, ep := range answered {
		ctx, cancel := g.commandContext(cmd)
		samples, err := metrics.NewReader(ep, tlsCfg, g.commandTimeout()).Samples(ctx, inactivePeersMetric)
		cancel()
		if err != nil {
			continue
		}
		for _, smp := range samples {
			for i := range silent {
				if silent[i].since.IsZero() && smp.Labels["Remote"] == fmt.Sprintf("%x", silent[i].member.GetID()) {
					silent[i].since, silent[i].seenBy = time.UnixMilli(int64(smp.Value*1000)), members[ep]
				}
			}
		}
		return silent
	}
	return silent
}

// inactivePeersMetric is internal/api.InactivePeersMetric, cairn's family of
// the peers a member has no message stream from.
const inactivePeersMetric = "cairn_network_peer_inactive_since_timestamp_seconds"

// silentMembersText is the report of the members that did not answer, of
// total endpoints asked, as of now:
//
//	Did not answer (1 of 3 endpoints):
//	  m3 (53336cbea8eba0e6) at http://127.0.0.1:24793: m1 (a65c3e411b0a4150) has had no message stream from it since 2026-12-02T02:05:42Z (2m3s ago)
func silentMembersText(silent []silentMember, total int, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Did not answer (%d of %d endpoints):\n", len(silent), total)
	for _, s := range silent {
		fmt.Fprintf(&b, "  %s at %s", memberText(s.member), s.endpoint)
		if !s.since.IsZero() {
			fmt.Fprintf(&b, ": %s has had no message stream from it since %s (%s ago)",
				memberText(s.seenBy), s.since.UTC().Format(time.RFC3339), now.Sub(s.since).Round(time.Second))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// memberText is "name (id)".
func memberText(m *pb.Member) string {
	return fmt.Sprintf("%s (%x)", m.GetName(), m.GetID())
}
