package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/featuregate"
	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/testnet"
)

// healthAnswer is what a Check or the first message of a Watch says: a
// status, or the code of an error.
func healthAnswer(st healthpb.HealthCheckResponse_ServingStatus, err error) string {
	if err != nil {
		return "error " + status.Code(err).String()
	}
	return st.String()
}

func checkHealth(t *testing.T, c healthpb.HealthClient, service string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	return healthAnswer(r.GetStatus(), err)
}

// watchHealth opens a Watch, ended with the test, and returns it with its
// first answer.
func watchHealth(t *testing.T, c healthpb.HealthClient, service string) (healthpb.Health_WatchClient, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return nil, healthAnswer(0, err)
	}
	r, err := w.Recv()
	return w, healthAnswer(r.GetStatus(), err)
}

// healthServices are the names asked for: the server's, an etcd service's,
// the health service's own and an unknown one.
var healthServices = []string{"", "etcdserverpb.KV", "grpc.health.v1.Health", "nosuch"}

// healthTranscript is every answer of the health service at curl.
func healthTranscript(t *testing.T, curl string) string {
	conn, err := grpc.NewClient(strings.TrimPrefix(curl, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := healthpb.NewHealthClient(conn)
	var b strings.Builder
	for _, svc := range healthServices {
		_, first := watchHealth(t, c, svc)
		fmt.Fprintf(&b, "Check(%q) = %s; Watch(%q) = %s\n", svc, checkHealth(t, c, svc), svc, first)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := c.List(ctx, &healthpb.HealthListRequest{})
	if err != nil {
		fmt.Fprintf(&b, "List: %s\n", healthAnswer(0, err))
	}
	for svc, st := range list.GetStatuses() { // only "" (a map: more would print in any order)
		fmt.Fprintf(&b, "List: %q %s\n", svc, st.GetStatus())
	}
	return b.String()
}

// TestGRPCHealthOfAMember: the server is SERVING, every other service name
// unknown, as etcd answers (TestGRPCHealthAsEtcd). A stopping member sends
// no NOT_SERVING: the Watch ends with the connection, as etcd's does.
func TestGRPCHealthOfAMember(t *testing.T) {
	m := startInProcess(t, 1, nil)[0]
	got := healthTranscript(t, m.curl)
	want := `Check("") = SERVING; Watch("") = SERVING
Check("etcdserverpb.KV") = error NotFound; Watch("etcdserverpb.KV") = SERVICE_UNKNOWN
Check("grpc.health.v1.Health") = error NotFound; Watch("grpc.health.v1.Health") = SERVICE_UNKNOWN
Check("nosuch") = error NotFound; Watch("nosuch") = SERVICE_UNKNOWN
List: "" SERVING
`
	if got != want {
		t.Errorf("health answers:\n%s\nwant:\n%s", got, want)
	}
	w, first := watchHealth(t, healthpb.NewHealthClient(m.dial(t)), "")
	if first != "SERVING" {
		t.Fatalf("Watch: %s", first)
	}
	m.stop()
	if r, err := w.Recv(); err == nil {
		t.Errorf("Watch after the member stopped: %v, want the stream to end", r.GetStatus())
	}
}

// TestGRPCHealthAsEtcd compares the answers with those of etcd 3.7.3.
func TestGRPCHealthAsEtcd(t *testing.T) {
	want := healthTranscript(t, etcdref.Start(t, testnet.FreeURL(t), testnet.FreeURL(t)))
	m := startInProcess(t, 1, nil)[0]
	if got := healthTranscript(t, m.curl); got != want {
		t.Errorf("cairn's health answers:\n%s\netcd's:\n%s", got, want)
	}
}

// TestGRPCHealthServingWithAlarms: etcd stays SERVING with a NOSPACE or a
// CORRUPT alarm raised (observed: 3.7.3 with --quota-backend-bytes
// exceeded, and with CORRUPT activated through Maintenance.Alarm).
func TestGRPCHealthServingWithAlarms(t *testing.T) {
	m := startInProcess(t, 1, nil)[0]
	conn := m.dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, alarm := range []pb.AlarmType{pb.AlarmType_NOSPACE, pb.AlarmType_CORRUPT} {
		if _, err := pb.NewMaintenanceClient(conn).Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: m.s.ID(), Alarm: alarm}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(m.s.Alarms()); n != 2 {
		t.Fatalf("%d alarms raised, want 2", n)
	}
	if got := checkHealth(t, healthpb.NewHealthClient(conn), ""); got != "SERVING" {
		t.Errorf("Check with NOSPACE and CORRUPT raised: %s, want SERVING", got)
	}
}

// TestGRPCHealthServingWithoutLeader: etcd stays SERVING on a member that
// lost its leader (observed: 3 members, two killed).
func TestGRPCHealthServingWithoutLeader(t *testing.T) {
	ms := startInProcess(t, 3, func(c *memberconfig.Config) {
		c.HeartbeatInterval, c.ElectionTimeout = 20*time.Millisecond, 200*time.Millisecond
	})
	ms[1].stop()
	ms[2].stop()
	select {
	case <-ms[0].s.LeaderLost():
	case <-time.After(10 * time.Second):
		t.Fatal("the survivor did not lose its leader")
	}
	if got := checkHealth(t, healthpb.NewHealthClient(ms[0].dial(t)), ""); got != "SERVING" {
		t.Errorf("Check without a leader: %s, want SERVING", got)
	}
}

// TestGRPCHealthDuringDefrag: with StopGRPCServiceOnDefrag the server is
// NOT_SERVING while a defragmentation runs and SERVING again after it, as
// etcd's (observed with a Watch: NOT_SERVING then SERVING around etcdctl
// defrag); without the gate it stays SERVING.
func TestGRPCHealthDuringDefrag(t *testing.T) {
	for _, gate := range []bool{false, true} {
		t.Run(fmt.Sprintf("gate=%v", gate), func(t *testing.T) {
			m := startInProcess(t, 1, func(c *memberconfig.Config) {
				c.Features = featuregate.Gates{featuregate.StopGRPCServiceOnDefrag: gate}
			})[0]
			conn := m.dial(t)
			c := healthpb.NewHealthClient(conn)
			w, first := watchHealth(t, c, "")
			if first != "SERVING" {
				t.Fatalf("Watch: %s", first)
			}
			during := "SERVING"
			if gate {
				during = "NOT_SERVING"
			}
			m.a.setDefragging(true) // as Defragment does around the backend's defragmentation
			if got := checkHealth(t, c, ""); got != during {
				t.Errorf("Check while defragmenting: %s, want %s", got, during)
			}
			m.a.setDefragging(false)
			if gate {
				for _, want := range []string{"NOT_SERVING", "SERVING"} {
					r, err := w.Recv()
					if got := healthAnswer(r.GetStatus(), err); got != want {
						t.Errorf("Watch: %s, want %s", got, want)
					}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := pb.NewMaintenanceClient(conn).Defragment(ctx, &pb.DefragmentRequest{}); err != nil {
				t.Fatal(err)
			}
			if got := checkHealth(t, c, ""); got != "SERVING" {
				t.Errorf("Check after a defragmentation: %s, want SERVING", got)
			}
		})
	}
}
