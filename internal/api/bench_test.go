package api

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/memberconfig"
)

// BenchmarkPutThroughAPI: one put by a clientv3 client to an in-process
// member, through the gRPC server, its interceptors, raft, the WAL and
// the apply loop.
func BenchmarkPutThroughAPI(b *testing.B) {
	_, _, cli := startMember(b, memberconfig.Config{})
	ctx := context.Background()
	value := make([]byte, 256)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cli.Put(ctx, "benchmark-key", string(value)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLinearizableRangeOnThreeMembers: one linearizable range by a
// clientv3 client to the leader of three in-process members: a ReadIndex
// round of the read loop (which also confirms the leader's leadership for
// its lease renewals) per read, the peers' heartbeat round trip included.
func BenchmarkLinearizableRangeOnThreeMembers(b *testing.B) {
	ms := startInProcess(b, 3, nil)
	lead := ms[0]
	for _, m := range ms {
		if m.s.ID() == m.s.Leader() {
			lead = m
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{lead.curl}, DialTimeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	if _, err := cli.Put(ctx, "benchmark-key", "v"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cli.Get(ctx, "benchmark-key"); err != nil {
			b.Fatal(err)
		}
	}
}
