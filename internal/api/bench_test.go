package api

import (
	"context"
	"testing"

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
