package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/metrics"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
	"github.com/cairnkv/cairn/internal/livediag"
)

// attachLiveDiagnose gives diagnose its live form: without data dirs, it
// diagnoses the running cluster of --endpoints (internal/livediag). Call
// it after addForensicsCommands.
func attachLiveDiagnose(root *cobra.Command, g *globalOptions) {
	diag, _, _ := root.Find([]string{"diagnose"})
	var (
		window          time.Duration
		redact, cluster bool
	)
	diag.Use = "diagnose [<data dir>...]"
	diag.Long += `

Without data dirs, diagnose looks at the running cluster (cairn's or etcd's) of
--endpoints (--cluster: every member): each member's status and metrics at both ends of a
window (--sample), the alarms, and every member's HashKV at one revision, and says what is
wrong, each verdict with its evidence (docs/recovery.md, "A live cluster"). --redact names
members member-N and endpoints endpoint-N. The exit status is 0 when nothing is wrong.`
	diag.Example += `
  cairn diagnose --endpoints 10.0.0.1:2379 --cluster
  cairn diagnose --endpoints 10.0.0.1:2379,10.0.0.2:2379 --sample 10s -w json --redact`
	diag.Args = cobra.ArbitraryArgs
	fs := diag.Flags()
	fs.DurationVar(&window, "sample", 5*time.Second, "live: how long to sample the members' metrics")
	fs.BoolVar(&redact, "redact", false, "live: name the members member-N and their endpoints endpoint-N")
	fs.BoolVar(&cluster, "cluster", false, "live: diagnose every member of the member list")
	offline := diag.RunE
	diag.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return offline(cmd, args)
		}
		return g.withClient(cmd, func(c *client.Client) error {
			in, err := gatherLive(cmd, g, c, cluster, window)
			if err != nil {
				return err
			}
			if redact {
				livediag.Redact(&in)
			}
			r := livediag.Judge(in)
			if g.v.GetString("write-out") == printer.FormatJSON {
				err = printer.New(cmd.OutOrStdout(), printer.FormatJSON, false).PrintJSON(r)
			} else {
				err = r.WriteText(cmd.OutOrStdout())
			}
			if err == nil && !r.Healthy {
				err = cmderr.ErrSilent // the report says why
			}
			return err
		})
	}
}

// gatherLive asks every target member for its status and metrics at both
// ends of the window, the alarms, and each member's HashKV at the lowest
// revision of those that answered.
func gatherLive(cmd *cobra.Command, g *globalOptions, c *client.Client, cluster bool, window time.Duration) (livediag.Input, error) {
	in := livediag.Input{Window: window}
	ctx, cancel := g.commandContext(cmd)
	list, err := c.Cluster.MemberList(ctx, &pb.MemberListRequest{Linearizable: false})
	cancel()
	if err != nil {
		return in, fmt.Errorf("member list: %w", err)
	}
	eps, byEndpoint, err := targetEndpoints(cmd, g, c, cluster)
	if err != nil {
		return in, err
	}
	tlsCfg, err := g.tlsConfig()
	if err != nil {
		return in, err
	}
	type sample struct {
		status *pb.StatusResponse
		scrape metrics.Scrape
		err    error
	}
	take := func() ([]sample, error) {
		return forEachEndpoint(cmd, g, c, eps, func(ctx context.Context, ep string, conn grpc.ClientConnInterface) sample {
			st, err := pb.NewMaintenanceClient(conn).Status(ctx, &pb.StatusRequest{})
			if err != nil {
				return sample{err: err}
			}
			scrape, err := metrics.NewReader(ep, tlsCfg, g.commandTimeout()).Scrape(ctx, livediag.Families...)
			return sample{status: st, scrape: scrape, err: err}
		})
	}
	before, err := take()
	if err != nil {
		return in, err
	}
	select {
	case <-time.After(window):
	case <-cmd.Context().Done():
		return in, cmd.Context().Err()
	}
	after, err := take()
	if err != nil {
		return in, err
	}
	ctx, cancel = g.commandContext(cmd)
	alarms, err := c.Maintenance.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_GET})
	cancel()
	if err == nil {
		for _, a := range alarms.GetAlarms() {
			in.Alarms = append(in.Alarms, livediag.Alarm{MemberID: a.GetMemberID(), Alarm: a.GetAlarm().String()})
		}
	}
	var rev int64
	for _, s := range after {
		if s.err == nil && (rev == 0 || s.status.GetHeader().GetRevision() < rev) {
			rev = s.status.GetHeader().GetRevision()
		}
	}
	hashes, err := forEachEndpoint(cmd, g, c, eps, func(ctx context.Context, ep string, conn grpc.ClientConnInterface) *pb.HashKVResponse {
		resp, err := pb.NewMaintenanceClient(conn).HashKV(ctx, &pb.HashKVRequest{Revision: rev})
		if err != nil {
			return nil
		}
		return resp
	})
	if err != nil {
		return in, err
	}
	for i, ep := range eps {
		m := livediag.Member{Endpoint: ep}
		if pm, ok := byEndpoint[ep]; ok {
			m.ID, m.Name, m.Learner = pm.GetID(), pm.GetName(), pm.GetIsLearner()
		}
		switch b, a := before[i], after[i]; {
		case a.err != nil:
			m.Err = a.err.Error()
		case b.err != nil:
			m.Err = b.err.Error()
		default:
			m.Before, m.After = livediag.FromStatus(b.status), livediag.FromStatus(a.status)
			m.MetricsBefore, m.MetricsAfter = b.scrape.Families, a.scrape.Families
			m.Clock = b.scrape.Clock.Intersect(a.scrape.Clock)
			m.ID = a.status.GetHeader().GetMemberId()
			m.Learner = a.status.GetIsLearner()
		}
		if h := hashes[i]; h != nil {
			m.HashRevision, m.CompactRevision, m.Hash = rev, h.GetCompactRevision(), h.GetHash()
		} else {
			m.HashErr = "no answer"
		}
		for _, pm := range list.GetMembers() {
			if pm.GetID() == m.ID && m.Name == "" {
				m.Name = pm.GetName()
			}
		}
		if m.Name == "" {
			m.Name = ep
		}
		in.Members = append(in.Members, m)
	}
	return in, nil
}
