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

// watchStartScript creates watchers on a new member at endpoint with start
// revisions negative, zero, in the past, one past the store's and far in
// the future, with a duplicate ID or an empty range besides, asks for
// progress notifications while a watcher starts in the future, writes up
// to that start, and compacts; it reports every response, all its fields
// but the cluster and member IDs. Responses that answer one step are
// sorted: the order between watchers is not the point.
func watchStartScript(t *testing.T, endpoint string) []string {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(endpoint, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv := pb.NewKVClient(conn)
	put := func(key string) int64 {
		t.Helper()
		resp, err := kv.Put(ctx, &pb.PutRequest{Key: []byte(key), Value: []byte("v")})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	for range 3 {
		put("k") // revisions 2..4
	}
	stream, err := pb.NewWatchClient(conn).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.CloseSend()
	resps := make(chan *pb.WatchResponse, 100)
	go func() {
		defer close(resps)
		for {
			r, err := stream.Recv()
			if err != nil {
				return
			}
			resps <- r
		}
	}()
	var out, pending []string
	// read sends reqs, then reads responses until done says so.
	read := func(reqs []*pb.WatchRequest, done func(*pb.WatchResponse) bool) {
		t.Helper()
		for _, r := range reqs {
			if err := stream.Send(r); err != nil {
				t.Fatalf("send: %v", err)
			}
		}
		for {
			var r *pb.WatchResponse
			select {
			case r = <-resps:
			case <-ctx.Done():
				t.Fatalf("no end after %v", pending)
			}
			if r == nil {
				t.Fatalf("the stream ended after %v", pending)
			}
			var evs []string
			for _, ev := range r.Events {
				evs = append(evs, fmt.Sprintf("%s %s@%d", ev.Type, ev.Kv.Key, ev.Kv.ModRevision))
			}
			pending = append(pending, fmt.Sprintf("rev=%d id=%d created=%v canceled=%v compact=%d reason=%q fragment=%v events=%v",
				r.Header.GetRevision(), r.WatchId, r.Created, r.Canceled, r.CompactRevision, r.CancelReason, r.Fragment, evs))
			if done(r) {
				return
			}
		}
	}
	// step reports what was read since the last step, under its name.
	step := func(name string) {
		slices.Sort(pending)
		for _, g := range pending {
			out = append(out, name+": "+g)
		}
		pending = nil
	}
	create := func(key, end string, start, id int64) *pb.WatchRequest {
		return &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{
			Key: []byte(key), RangeEnd: []byte(end), StartRevision: start, WatchId: id}}}
	}
	progress := &pb.WatchRequest{RequestUnion: &pb.WatchRequest_ProgressRequest{ProgressRequest: &pb.WatchProgressRequest{}}}
	created := func(r *pb.WatchResponse) bool { return r.Created }
	// A watcher of key m is the marker: the event of a write on m ends a
	// step, after every response of the revisions before it (the stream
	// sends each watcher's in order, and whole revisions one after the
	// other).
	markRev := int64(0)
	mark := func() {
		t.Helper()
		rev := put("m")
		markRev = rev
		read(nil, func(r *pb.WatchResponse) bool {
			return r.WatchId == 0 && len(r.Events) > 0 && r.Events[len(r.Events)-1].Kv.ModRevision == rev
		})
	}

	read([]*pb.WatchRequest{create("k", "", -5, 4)}, created)
	step("start -5, the stream's first watcher")
	// The stream still serves: the marker, a watcher of m from now on (ID 0).
	read([]*pb.WatchRequest{create("m", "", 0, 0)}, created)
	step("start 0")
	read([]*pb.WatchRequest{create("k", "", 0, 9)}, created)
	step("start 0, ID 9")
	read([]*pb.WatchRequest{create("k", "", -3, 9)}, created)
	step("start -3, ID 9 taken")
	read([]*pb.WatchRequest{create("k", "", 0, 9)}, created)
	step("start 0, ID 9 taken")
	read([]*pb.WatchRequest{create("k", "a", -3, 10)}, created)
	step("start -3, empty range")
	read([]*pb.WatchRequest{create("k", "a", 0, 10)}, created)
	step("start 0, empty range")
	read([]*pb.WatchRequest{create("k", "", 1, 11)}, func(r *pb.WatchResponse) bool {
		return r.WatchId == 11 && len(r.Events) > 0 && r.Events[len(r.Events)-1].Kv.ModRevision == 4
	})
	step("start 1")
	put("k") // 5
	mark()   // 6
	step("a write on k")

	// Progress while a watcher starts in the future: a watcher created
	// after the request, then a write on m, mark the end of what the
	// request may bring.
	for _, ahead := range []int64{50, 2, 1} {
		id := 20 + ahead
		read([]*pb.WatchRequest{create("k", "", markRev+ahead, id)}, created)
		step(fmt.Sprintf("start current+%d", ahead))
		read([]*pb.WatchRequest{progress, create("n", "", 0, 100+id)}, created)
		mark()
		step(fmt.Sprintf("progress with a watcher at current+%d", ahead))
		read([]*pb.WatchRequest{{RequestUnion: &pb.WatchRequest_CancelRequest{CancelRequest: &pb.WatchCancelRequest{WatchId: id}}}},
			func(r *pb.WatchResponse) bool { return r.Canceled })
		step(fmt.Sprintf("cancel the watcher that was at current+%d", ahead))
	}
	start := markRev + 2
	read([]*pb.WatchRequest{create("k", "", start, 24)}, created)
	step("start current+2")
	put("k")
	put("k")
	mark()
	step("writes past current+2")
	read([]*pb.WatchRequest{progress, create("n", "", 0, 25)}, created)
	mark()
	step("progress, every watcher current")

	if _, err := kv.Compact(ctx, &pb.CompactionRequest{Revision: 3}); err != nil {
		t.Fatal(err)
	}
	read([]*pb.WatchRequest{create("k", "", -2, 30)}, created)
	step("compacted at 3, start -2")
	read([]*pb.WatchRequest{create("k", "", 2, 31)}, func(r *pb.WatchResponse) bool { return r.CompactRevision != 0 })
	step("compacted at 3, start 2")
	return out
}

// TestWatchStartRevisionsAsEtcd runs watchStartScript on etcd 3.7.3 and on
// a cairn member and wants the same responses. etcd refuses a negative
// start revision as compacted (created and canceled, no ID, the reason
// "etcdserver: mvcc: required revision has been compacted", compact
// revision 0) and its stream goes on serving; it sends no progress
// notification while a watcher starts beyond the next revision.
func TestWatchStartRevisionsAsEtcd(t *testing.T) {
	want := watchStartScript(t, etcdref.Start(t, testnet.FreeURL(t), testnet.FreeURL(t)))
	curl, _, _ := startMember(t, memberconfig.Config{})
	got := watchStartScript(t, curl)
	if !slices.Equal(want, got) {
		t.Errorf("cairn answers otherwise than etcd:\n%s", diffLines(want, got))
	}
	t.Logf("etcd's answers:\n%s", strings.Join(want, "\n"))
}
