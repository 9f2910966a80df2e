package client

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/internal/client/clienttest"
)

// fakeMember is an in-process gRPC server standing for one member: it
// answers Status with its leader and counts the puts and ranges it takes.
type fakeMember struct {
	pb.UnimplementedKVServer
	pb.UnimplementedMaintenanceServer
	addr   string
	leader atomic.Uint64
	// serve decides what a put or range does; nil answers at once.
	serve  func(ctx context.Context) error
	puts   atomic.Int64
	ranges atomic.Int64
}

func startFakeMember(t *testing.T, leader uint64, serve func(ctx context.Context) error) *fakeMember {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &fakeMember{addr: l.Addr().String(), serve: serve}
	m.leader.Store(leader)
	s := grpc.NewServer()
	pb.RegisterKVServer(s, m)
	pb.RegisterMaintenanceServer(s, m)
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return m
}

func (m *fakeMember) do(ctx context.Context) error {
	if m.serve == nil {
		return nil
	}
	return m.serve(ctx)
}

func (m *fakeMember) Put(ctx context.Context, _ *pb.PutRequest) (*pb.PutResponse, error) {
	m.puts.Add(1)
	if err := m.do(ctx); err != nil {
		return nil, err
	}
	return &pb.PutResponse{Header: &pb.ResponseHeader{}}, nil
}

func (m *fakeMember) Range(ctx context.Context, _ *pb.RangeRequest) (*pb.RangeResponse, error) {
	m.ranges.Add(1)
	if err := m.do(ctx); err != nil {
		return nil, err
	}
	return &pb.RangeResponse{Header: &pb.ResponseHeader{}}, nil
}

func (m *fakeMember) Status(context.Context, *pb.StatusRequest) (*pb.StatusResponse, error) {
	return &pb.StatusResponse{Header: &pb.ResponseHeader{}, Leader: m.leader.Load()}, nil
}

// hold never answers: a member cut off from its peers that holds requests.
func hold(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func newTestClient(t *testing.T, members ...*fakeMember) *Client {
	t.Helper()
	var addrs []string
	for _, m := range members {
		addrs = append(addrs, m.addr)
	}
	c, err := New(Config{Endpoints: addrs, HealthProbeInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitProbedHealthy waits until the first probe round found every member
// of c healthy.
func waitProbedHealthy(t *testing.T, c *Client) {
	t.Helper()
	clienttest.Poll(t, 5*time.Second, "every member probed healthy", func() bool {
		for _, e := range c.balancer.list() {
			if e.health.Load() != healthGood {
				return false
			}
		}
		return true
	})
}

// A put refused at once with "no leader" was not proposed: it goes to
// another member, and the refusing one leaves the rotation.
func TestPutRefusedForNoLeaderGoesElsewhere(t *testing.T) {
	refusing := startFakeMember(t, 1, func(context.Context) error { return rpctypes.ErrGRPCNoLeader })
	good := startFakeMember(t, 1, nil)
	c := newTestClient(t, refusing, good)
	waitProbedHealthy(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 4 {
		if _, err := c.KV.Put(ctx, &pb.PutRequest{Key: []byte("k")}); err != nil {
			t.Fatal(err)
		}
	}
	if n := refusing.puts.Load(); n > 1 {
		t.Errorf("the member without leader got %d puts, want at most 1 (it leaves the rotation)", n)
	}
	if n := good.puts.Load(); n != 4 {
		t.Errorf("the good member executed %d puts, want 4", n)
	}
}

// A put whose outcome is unknown is never sent again: neither one held
// until the caller gives up, nor one answered "no leader" only after long
// (a server may say so of a proposal that timed out). The member that held
// it leaves the rotation for a while all the same.
func TestPutWithUnknownOutcomeIsNotRetried(t *testing.T) {
	for _, tt := range []struct {
		name    string
		serve   func(context.Context) error
		timeout time.Duration // of each put
	}{
		{"held", hold, noLeaderProofWindow * 3 / 2},
		// As a server that reports a proposal timed out at the caller's
		// deadline (a little before, on its clock) as "no leader" would:
		// sooner than the window.
		{"no leader at the deadline", func(ctx context.Context) error {
			deadline, _ := ctx.Deadline()
			<-time.After(time.Until(deadline) - 50*time.Millisecond)
			return rpctypes.ErrGRPCNoLeader
		}, noLeaderProofWindow / 3},
		{"slow no leader", func(ctx context.Context) error {
			select {
			case <-time.After(noLeaderProofWindow + 100*time.Millisecond):
				return rpctypes.ErrGRPCNoLeader
			case <-ctx.Done():
				return ctx.Err()
			}
		}, noLeaderProofWindow * 3 / 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad := startFakeMember(t, 1, tt.serve)
			good := startFakeMember(t, 1, nil)
			c := newTestClient(t, bad, good)
			waitProbedHealthy(t, c)
			const n = 4
			failed := int64(0)
			for range n {
				ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
				if _, err := c.KV.Put(ctx, &pb.PutRequest{Key: []byte("k")}); err != nil {
					failed++
				}
				cancel()
			}
			if bad.puts.Load() != 1 || failed != 1 || good.puts.Load() != n-1 {
				t.Fatalf("%d puts failed; the bad member got %d, the good one %d: want 1 failed on the bad member (not sent again), %d on the good one",
					failed, bad.puts.Load(), good.puts.Load(), n-1)
			}
		})
	}
}

// A read held by a member that then turns out to have no leader (the probe
// of the stalled request finds it out) goes to another member.
func TestHeldReadMovesWhenMemberLosesLeader(t *testing.T) {
	bad := startFakeMember(t, 1, hold)
	good := startFakeMember(t, 1, nil)
	c := newTestClient(t, bad, good)
	waitProbedHealthy(t, c)
	bad.leader.Store(0) // cut off: it learns it has no leader
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for bad.ranges.Load() == 0 {
		began := time.Now()
		if _, err := c.KV.Range(ctx, &pb.RangeRequest{Key: []byte("k")}); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took > time.Second {
			t.Fatalf("range took %v", took)
		}
	}
	if bad.ranges.Load() != 1 {
		t.Fatalf("the member without leader got %d ranges, want 1", bad.ranges.Load())
	}
	if _, err := c.KV.Range(ctx, &pb.RangeRequest{Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	if bad.ranges.Load() != 1 {
		t.Fatalf("the member without leader got %d ranges after it was found out, want 1", bad.ranges.Load())
	}
}

// A new client's first request goes to a member with a leader, whichever
// endpoint comes first, without waiting for the periodic probe.
func TestFirstRequestAvoidsMemberWithoutLeader(t *testing.T) {
	for range 5 {
		leaderless := startFakeMember(t, 0, hold)
		good := startFakeMember(t, 1, nil)
		c := newTestClient(t, leaderless, good)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := c.KV.Put(ctx, &pb.PutRequest{Key: []byte("k")})
		cancel()
		if err != nil || leaderless.puts.Load() != 0 {
			t.Fatalf("first put: %v; %d sent to the member without leader", err, leaderless.puts.Load())
		}
	}
}
