package client

import (
	"context"
	"errors"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func testBalancer(t *testing.T, addrs ...string) *balancer {
	t.Helper()
	b, err := newBalancer(Config{Endpoints: addrs}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.close)
	return b
}

// picks returns how often each endpoint is picked in n picks.
func picks(t *testing.T, b *balancer, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		e, err := b.pick(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		got[e.addr]++
	}
	return got
}

func TestPickPrefersHealthyThenUnknownThenUnhealthy(t *testing.T) {
	b := testBalancer(t, "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3")
	eps := b.list()
	eps[0].setProbeResult(false)
	eps[1].setProbeResult(true)
	if got := picks(t, b, 6); got[eps[1].addr] != 6 {
		t.Fatalf("picks %v, want only the healthy %s", got, eps[1].addr)
	}
	eps[1].markFailed()
	if got := picks(t, b, 6); got[eps[2].addr] != 6 {
		t.Fatalf("picks %v, want only the unprobed %s once the healthy one failed", got, eps[2].addr)
	}
	eps[2].markStalled()
	eps[2].setProbeResult(true) // the probe does not lift a stall's quarantine
	if got := picks(t, b, 6); len(got) == 0 || got[eps[0].addr]+got[eps[1].addr]+got[eps[2].addr] != 6 {
		t.Fatalf("picks %v: with nothing available, some endpoint must still be picked", got)
	}
	eps[1].setProbeResult(true) // the probe lifts a connection failure's quarantine
	if got := picks(t, b, 6); got[eps[1].addr] != 6 {
		t.Fatalf("picks %v, want only %s, vouched for by the probe", got, eps[1].addr)
	}
}

func TestPickWaitsForFirstProbeRound(t *testing.T) {
	b := testBalancer(t, "127.0.0.1:1")
	b.ready = make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.pick(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("pick before the first probe round: %v, want to wait until the context ends", err)
	}
	b.markReady()
	b.markReady() // idempotent
	if _, err := b.pick(context.Background(), nil); err != nil {
		t.Fatalf("pick once ready: %v", err)
	}
}

func TestProvesNotExecuted(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		elapsed time.Duration
		budget  time.Duration
		want    bool
	}{
		{"no leader at once", rpctypes.ErrGRPCNoLeader, time.Millisecond, 0, true},
		{"no leader at once, with a deadline", rpctypes.ErrGRPCNoLeader, time.Millisecond, time.Second, true},
		{"converted no leader", rpctypes.ErrNoLeader, time.Millisecond, 0, true},
		{"no leader after a long wait", rpctypes.ErrGRPCNoLeader, 6 * time.Second, 0, false},
		{"no leader at the caller's deadline", rpctypes.ErrGRPCNoLeader, 290 * time.Millisecond, 300 * time.Millisecond, false},
		{"timeout", rpctypes.ErrGRPCTimeout, time.Millisecond, 0, false},
		{"timeout due to leader failure", rpctypes.ErrGRPCTimeoutDueToLeaderFail, time.Millisecond, 0, false},
		{"other unavailable", status.Error(codes.Unavailable, "transport is closing"), time.Millisecond, 0, false},
		{"deadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), time.Millisecond, 0, false},
	}
	for _, tt := range tests {
		if got := provesNotExecuted(tt.err, tt.elapsed, tt.budget); got != tt.want {
			t.Errorf("%s: provesNotExecuted = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestNeedsLeader(t *testing.T) {
	tests := []struct {
		method string
		req    any
		want   bool
	}{
		{"/etcdserverpb.KV/Range", &pb.RangeRequest{}, true},
		{"/etcdserverpb.KV/Range", &pb.RangeRequest{Serializable: true}, false},
		{"/etcdserverpb.KV/Put", &pb.PutRequest{}, true},
		{"/etcdserverpb.KV/Txn", &pb.TxnRequest{}, true},
		{"/etcdserverpb.Lease/LeaseGrant", &pb.LeaseGrantRequest{}, true},
		{authenticateMethod, &pb.AuthenticateRequest{}, true},
		{"/etcdserverpb.Maintenance/Status", &pb.StatusRequest{}, false},
		{"/etcdserverpb.Cluster/MemberList", &pb.MemberListRequest{}, false},
	}
	for _, tt := range tests {
		if got := needsLeader(tt.method, tt.req); got != tt.want {
			t.Errorf("needsLeader(%s, %T) = %v, want %v", tt.method, tt.req, got, tt.want)
		}
	}
}
