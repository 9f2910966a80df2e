package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/testnet"
)

// hashKVScript writes the history of etcd's hashkv e2e tests on a new
// member at endpoint (40 operations: txns putting key0 and key1, every
// tenth a delete of key0), then compacts at the first delete, defragments,
// compacts at a put, defragments, and reports HashKV along the way, with
// the hash values; then compacts at the third delete and reports the first
// events of a watch from there.
func hashKVScript(t *testing.T, endpoint string) []string {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(endpoint, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, mc := pb.NewKVClient(conn), pb.NewMaintenanceClient(conn)
	var out []string
	hashKV := func(when string, rev int64) {
		h, err := mc.HashKV(ctx, &pb.HashKVRequest{Revision: rev})
		if err != nil {
			out = append(out, fmt.Sprintf("%s: HashKV(%d): %v", when, rev, err))
			return
		}
		out = append(out, fmt.Sprintf("%s: HashKV(%d) = hash %d, hash revision %d, compact revision %d", when, rev, h.Hash, h.HashRevision, h.CompactRevision))
	}
	compactAndDefrag := func(rev int64) {
		if _, err := kv.Compact(ctx, &pb.CompactionRequest{Revision: rev, Physical: true}); err != nil {
			t.Fatalf("compact at %d: %v", rev, err)
		}
		if _, err := mc.Defragment(ctx, &pb.DefragmentRequest{}); err != nil {
			t.Fatalf("defragment: %v", err)
		}
	}
	hashKV("new", 0)
	var tombs []int64
	var last int64
	for i := 1; i <= 40; i++ {
		if i%10 == 0 {
			resp, err := kv.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("key0")})
			if err != nil {
				t.Fatal(err)
			}
			last = resp.Header.Revision
			tombs = append(tombs, last)
			continue
		}
		var ops []*pb.RequestOp
		for _, k := range []string{"key0", "key1"} {
			ops = append(ops, &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k), Value: []byte(fmt.Sprint(i))}}})
		}
		resp, err := kv.Txn(ctx, &pb.TxnRequest{Success: ops})
		if err != nil {
			t.Fatal(err)
		}
		last = resp.Header.Revision
	}
	first, second := tombs[0], tombs[1]+5
	hashKV("before compacting", first)
	compactAndDefrag(first)
	for rev := first; rev <= last; rev++ {
		hashKV(fmt.Sprintf("compacted at %d", first), rev)
	}
	hashKV(fmt.Sprintf("compacted at %d", first), 0)
	hashKV(fmt.Sprintf("compacted at %d", first), first-1)
	compactAndDefrag(second)
	for _, rev := range []int64{first, second, second + 1, last} {
		hashKV(fmt.Sprintf("compacted at %d", second), rev)
	}

	compactAndDefrag(tombs[2])
	wc, err := pb.NewWatchClient(conn).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer wc.CloseSend()
	if err := wc.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{
		Key: []byte("key0"), StartRevision: tombs[2]}}}); err != nil {
		t.Fatal(err)
	}
	var events []string
	for len(events) < 2 {
		resp, err := wc.Recv()
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		if resp.CompactRevision != 0 {
			events = append(events, fmt.Sprintf("compacted at %d", resp.CompactRevision))
			break
		}
		for _, ev := range resp.Events {
			events = append(events, fmt.Sprintf("%s@%d", ev.Type, ev.Kv.ModRevision))
		}
	}
	out = append(out, fmt.Sprintf("watch key0 from %d, compacted there: %v", tombs[2], events))
	return out
}

// TestHashKVAndCompactionAsEtcd runs hashKVScript on etcd 3.7.3 and on a
// cairn member and wants the same lines, hash values included: HashKV at a
// compaction revision is the same before and after the compaction and a
// defragmentation (etcd's TestVerifyHashKVAfterCompactAndDefrag), with the
// compact revision before it (-1 when none), and a watch from a
// compaction at a delete sees the DELETE.
func TestHashKVAndCompactionAsEtcd(t *testing.T) {
	want := hashKVScript(t, etcdref.Start(t, testnet.FreeURL(t), testnet.FreeURL(t)))
	curl, _, _ := startMember(t, memberconfig.Config{})
	got := hashKVScript(t, curl)
	if !slices.Equal(want, got) {
		t.Errorf("cairn answers otherwise than etcd:\n%s", diffLines(want, got))
	}
}
