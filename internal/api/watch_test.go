package api

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/pkg/store"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

// TestWatchEncodedResponseIsTheMarshalledOne: a watch response built from
// the header, the watch ID and the events encoded once is, byte for byte,
// the marshalled pb.WatchResponse, with and without prev_kv, for any ID.
func TestWatchEncodedResponseIsTheMarshalledOne(t *testing.T) {
	kv := func(k, v string, rev int64) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte(k), Value: []byte(v), CreateRevision: 2, ModRevision: rev, Version: rev - 1, Lease: 7}
	}
	eventSets := [][]*mvccpb.Event{
		{{Type: mvccpb.PUT, Kv: kv("a", "1", 5)}},
		{{Type: mvccpb.PUT, Kv: kv("a", strings.Repeat("v", 300), 6)}, {Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte("b"), ModRevision: 6}}},
		{{Type: mvccpb.PUT, Kv: kv("a", "2", 7), PrevKv: kv("a", "1", 5)}, {Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte("b"), ModRevision: 7}, PrevKv: kv("b", "x", 3)}},
	}
	w := &watchStream{}
	for _, hdr := range []*pb.ResponseHeader{
		{ClusterId: 0x1234, MemberId: 0x5678, Revision: 5, RaftTerm: 2},
		{ClusterId: 0x1234, MemberId: 0x5678, Revision: 6, RaftTerm: 2},
		{ClusterId: 0x1234, MemberId: 0x5678, Revision: 6, RaftTerm: 3},
	} {
		for _, evs := range eventSets {
			shared := store.NewEncodedEvents(evs)
			for _, id := range []int64{0, 1, 300, 1 << 40} {
				want := &pb.WatchResponse{Header: hdr, WatchId: id, Events: evs}
				wantBytes, err := proto.Marshal(want)
				if err != nil {
					t.Fatal(err)
				}
				m, err := w.encoded(headerKey{hdr.ClusterId, hdr.MemberId, hdr.Revision, hdr.RaftTerm}, id, shared)
				if err != nil {
					t.Fatal(err)
				}
				got := append(append([]byte(nil), m.b...), m.tail...)
				if m.EncodedSize() != len(got) || !bytes.Equal(got, wantBytes) {
					t.Errorf("header %v, ID %d, %d events: encoded %x (size %d), want %x", hdr, id, len(evs), got, m.EncodedSize(), wantBytes)
				}
				decoded := new(pb.WatchResponse)
				if err := proto.Unmarshal(got, decoded); err != nil || !proto.Equal(decoded, want) {
					t.Errorf("header %v, ID %d: decodes to %v (%v), want %v", hdr, id, decoded, err, want)
				}
			}
		}
	}
}

// TestWatchResponsesOverGRPC: watchers of one prefix on one stream, with
// prev_kv, a filter, fragments, and one catching up from the history, each
// get over gRPC exactly the responses etcd sends, the oversized ones of a
// fragment watcher in parts no larger than the request limit.
func TestWatchResponsesOverGRPC(t *testing.T) {
	const limit = 1500
	m := startInProcess(t, 1, func(c *memberconfig.Config) { c.MaxRequestBytes = limit })[0]
	conn := m.dial(t)
	kv := pb.NewKVClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := pb.NewWatchClient(conn).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	create := func(stream pb.Watch_WatchClient, cr *pb.WatchCreateRequest) int64 {
		t.Helper()
		cr.Key, cr.RangeEnd = []byte("w/"), []byte("w0")
		if err := stream.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: cr}}); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil || !resp.Created || resp.Canceled {
			t.Fatalf("create %v: %v, %v", cr, resp, err)
		}
		return resp.WatchId
	}
	plain := create(stream, &pb.WatchCreateRequest{})
	prev := create(stream, &pb.WatchCreateRequest{PrevKv: true})
	noPut := create(stream, &pb.WatchCreateRequest{Filters: []pb.WatchCreateRequest_FilterType{pb.WatchCreateRequest_NOPUT}})
	fragPrev := create(stream, &pb.WatchCreateRequest{PrevKv: true, Fragment: true})
	frag := create(stream, &pb.WatchCreateRequest{Fragment: true})

	big := func(c string) []byte { return bytes.Repeat([]byte(c), 600) }
	put := func(k string, v []byte) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k), Value: v}}}
	}
	got := map[int64][]*pb.WatchResponse{}
	receive := func(stream pb.Watch_WatchClient, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			r, err := stream.Recv()
			if err != nil {
				t.Fatalf("after %d responses: %v", i, err)
			}
			if r.Fragment && proto.Size(r) > limit {
				t.Errorf("a fragment of %d bytes, over the limit of %d", proto.Size(r), limit)
			}
			got[r.WatchId] = append(got[r.WatchId], r)
		}
	}
	// The responses of each revision, before the next is written: so that
	// none are sent together as one.
	responses := []int{4, 4, 5, 5}
	for i, ops := range [][]*pb.RequestOp{
		{put("w/a", big("a"))},                       // revision 2
		{put("w/b", big("b"))},                       // 3
		{put("w/a", big("c")), put("w/b", big("d"))}, // 4: 1,250 bytes of events, 2,500 with prev_kv
		{{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("w/a")}}}}, // 5
	} {
		if _, err := kv.Txn(ctx, &pb.TxnRequest{Success: ops}); err != nil {
			t.Fatal(err)
		}
		receive(stream, responses[i])
	}
	// On a stream of its own, a watcher that catches up: 2,500 bytes at once.
	other, err := pb.NewWatchClient(conn).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	history := create(other, &pb.WatchCreateRequest{StartRevision: 2, Fragment: true})

	ev := func(typ mvccpb.Event_EventType, key string, val []byte, create, mod, version int64) *mvccpb.Event {
		e := &mvccpb.Event{Type: typ, Kv: &mvccpb.KeyValue{Key: []byte(key), ModRevision: mod}}
		if typ == mvccpb.PUT {
			e.Kv.Value, e.Kv.CreateRevision, e.Kv.Version = val, create, version
		}
		return e
	}
	withPrev := func(e *mvccpb.Event, p *mvccpb.Event) *mvccpb.Event {
		c := proto.Clone(e).(*mvccpb.Event)
		c.PrevKv = p.Kv
		return c
	}
	a2 := ev(mvccpb.PUT, "w/a", big("a"), 2, 2, 1)
	b3 := ev(mvccpb.PUT, "w/b", big("b"), 3, 3, 1)
	a4 := ev(mvccpb.PUT, "w/a", big("c"), 2, 4, 2)
	b4 := ev(mvccpb.PUT, "w/b", big("d"), 3, 4, 2)
	a5 := ev(mvccpb.DELETE, "w/a", nil, 0, 5, 0)
	resp := func(id, rev int64, fragment bool, evs ...*mvccpb.Event) *pb.WatchResponse {
		return &pb.WatchResponse{Header: m.a.header(rev), WatchId: id, Fragment: fragment, Events: evs}
	}
	want := map[int64][]*pb.WatchResponse{
		plain: {resp(plain, 2, false, a2), resp(plain, 3, false, b3), resp(plain, 4, false, a4, b4), resp(plain, 5, false, a5)},
		prev:  {resp(prev, 2, false, a2), resp(prev, 3, false, b3), resp(prev, 4, false, withPrev(a4, a2), withPrev(b4, b3)), resp(prev, 5, false, withPrev(a5, a4))},
		noPut: {resp(noPut, 5, false, a5)},
		fragPrev: {resp(fragPrev, 2, false, a2), resp(fragPrev, 3, false, b3),
			resp(fragPrev, 4, true, withPrev(a4, a2)), resp(fragPrev, 4, false, withPrev(b4, b3)), resp(fragPrev, 5, false, withPrev(a5, a4))},
		frag: {resp(frag, 2, false, a2), resp(frag, 3, false, b3), resp(frag, 4, false, a4, b4), resp(frag, 5, false, a5)},
	}
	wantOther := map[int64][]*pb.WatchResponse{
		history: {resp(history, 5, true, a2, b3), resp(history, 5, false, a4, b4, a5)},
	}
	gotMain := got
	got = map[int64][]*pb.WatchResponse{}
	receive(other, 2)
	for _, s := range []struct {
		got, want map[int64][]*pb.WatchResponse
	}{{gotMain, want}, {got, wantOther}} {
		got := s.got
		for id, rs := range s.want {
			if len(got[id]) != len(rs) {
				t.Errorf("watcher %d: %d responses, want %d", id, len(got[id]), len(rs))
				continue
			}
			for i := range rs {
				if !proto.Equal(got[id][i], rs[i]) {
					t.Errorf("watcher %d, response %d:\n got %s\nwant %s", id, i, brief(got[id][i]), brief(rs[i]))
				}
			}
		}
	}
}

// brief describes a watch response without its long values.
func brief(r *pb.WatchResponse) string {
	s := fmt.Sprintf("id %d header %v fragment %v:", r.WatchId, r.Header, r.Fragment)
	for _, ev := range r.Events {
		s += fmt.Sprintf(" %s %s@%d(%d bytes, prev %v)", ev.Type, ev.Kv.Key, ev.Kv.ModRevision, len(ev.Kv.Value), ev.PrevKv != nil)
	}
	return s
}

// BenchmarkWatchResponseEncoding: one revision's event made into the
// responses of 10,000 watchers, by marshalling each response (as before)
// and from the events encoded once.
func BenchmarkWatchResponseEncoding(b *testing.B) {
	evs := []*mvccpb.Event{{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte("/bench-watch/key-000001"), Value: make([]byte, 64),
		CreateRevision: 2, ModRevision: 1000, Version: 10}}}
	hdr := &pb.ResponseHeader{ClusterId: 0x1234, MemberId: 0x5678, Revision: 1000, RaftTerm: 2}
	const watchers = 10000
	b.Run("marshal-each", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for id := range int64(watchers) {
				if _, err := proto.Marshal(&pb.WatchResponse{Header: hdr, WatchId: id % 100, Events: evs}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("encoded-once", func(b *testing.B) {
		b.ReportAllocs()
		w := &watchStream{}
		key := headerKey{hdr.ClusterId, hdr.MemberId, hdr.Revision, hdr.RaftTerm}
		for b.Loop() {
			shared := store.NewEncodedEvents(evs)
			for id := range int64(watchers) {
				if _, err := w.encoded(key, id%100, shared); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// TestCoalesce: a watcher's event responses found together become one, up
// to its next other response or the stream's progress notification; the
// store's shared event slices are not written to.
func TestCoalesce(t *testing.T) {
	ev := func(rev int64) *mvccpb.Event {
		return &mvccpb.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte("k"), ModRevision: rev}}
	}
	shared2 := make([]*mvccpb.Event, 1, 4) // spare room, as the store's slices may have
	shared2[0] = ev(2)
	e2, e3, e4, e5 := store.NewEncodedEvents(shared2), store.NewEncodedEvents([]*mvccpb.Event{ev(3)}), store.NewEncodedEvents([]*mvccpb.Event{ev(4)}), store.NewEncodedEvents([]*mvccpb.Event{ev(5)})
	batch := []store.WatchResponse{
		{WatchID: 1, Revision: 2, Events: shared2, Encoded: e2},
		{WatchID: 2, Revision: 2, Events: shared2, Encoded: e2},
		{WatchID: 1, Revision: 3, Events: []*mvccpb.Event{ev(3)}, Encoded: e3},
		{WatchID: 2, Revision: 3}, // progress
		{WatchID: 2, Revision: 3, Events: []*mvccpb.Event{ev(3)}, Encoded: e3},
		{WatchID: store.ProgressAllWatchID, Revision: 3},
		{WatchID: 1, Revision: 4, Events: []*mvccpb.Event{ev(4)}, Encoded: e4},
		{WatchID: 3, Revision: 4, Events: []*mvccpb.Event{ev(4)}}, // no encoding (prev_kv, say)
		{WatchID: 3, Revision: 5, Events: []*mvccpb.Event{ev(5)}, Encoded: e5},
		{WatchID: 1, Revision: 9, CompactRevision: 9},
	}
	describe := func(o outgoing) string {
		s := fmt.Sprintf("%d@%d", o.r.WatchID, o.r.Revision)
		for _, e := range o.r.Events {
			s += fmt.Sprintf(" %d", e.Kv.ModRevision)
		}
		if o.r.CompactRevision != 0 {
			s += " compacted"
		}
		if o.enc != nil {
			s += fmt.Sprintf(" enc+%d", len(o.more))
		}
		return s
	}
	var got []string
	for _, o := range coalesce(batch) {
		got = append(got, describe(o))
	}
	want := []string{"1@3 2 3 enc+1", "2@2 2 enc+0", "2@3", "2@3 3 enc+0", "-1@3", "1@4 4 enc+0", "3@5 4 5", "1@9 compacted"}
	if !slices.Equal(got, want) {
		t.Errorf("coalesced:\n got %q\nwant %q", got, want)
	}
	if len(shared2) != 1 || shared2[:2][1] != nil {
		t.Error("coalescing wrote into the store's shared slice")
	}
	// The merged response in its wire form is the marshalled one.
	hdr := &pb.ResponseHeader{ClusterId: 1, MemberId: 2, Revision: 3, RaftTerm: 4}
	m, err := (&watchStream{}).encoded(headerKey{1, 2, 3, 4}, 1, e2, e3)
	if err != nil {
		t.Fatal(err)
	}
	wantBytes, _ := proto.Marshal(&pb.WatchResponse{Header: hdr, WatchId: 1, Events: []*mvccpb.Event{ev(2), ev(3)}})
	gotBytes := slices.Clone(m.b)
	for _, t := range m.tails {
		gotBytes = append(gotBytes, t...)
	}
	if !bytes.Equal(gotBytes, wantBytes) || m.EncodedSize() != len(wantBytes) {
		t.Errorf("merged response %x (size %d), want %x", gotBytes, m.EncodedSize(), wantBytes)
	}
	bufs, err := newCodec().Marshal(m)
	if err != nil || !bytes.Equal(bufs.Materialize(), wantBytes) {
		t.Errorf("the codec sends %x (%v), want %x", bufs.Materialize(), err, wantBytes)
	}
}

// TestCoalesceStopsAtABound: a watcher catching up gets many large
// responses in a row; coalesce merges them into responses of about
// coalescedEvents events, in order, none lost, so that no send is so large
// that a creation on the stream waits long for it.
func TestCoalesceStopsAtABound(t *testing.T) {
	const perResponse, responses = 300, 20
	var batch []store.WatchResponse
	rev := int64(1)
	for range responses {
		evs := make([]*mvccpb.Event, perResponse)
		for i := range evs {
			rev++
			evs[i] = &mvccpb.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte("k"), ModRevision: rev}}
		}
		batch = append(batch, store.WatchResponse{WatchID: 1, Revision: rev, Events: evs, Encoded: store.NewEncodedEvents(evs)})
	}
	next := int64(2)
	out := coalesce(batch)
	for _, o := range out {
		if len(o.r.Events) >= coalescedEvents+perResponse {
			t.Errorf("a response of %d events, past the bound of %d", len(o.r.Events), coalescedEvents)
		}
		for _, e := range o.r.Events {
			if e.Kv.ModRevision != next {
				t.Fatalf("event of revision %d where %d was next", e.Kv.ModRevision, next)
			}
			next++
		}
		if o.r.Revision != next-1 || o.enc == nil || len(o.more) != len(o.r.Events)/perResponse-1 {
			t.Errorf("response at %d after revision %d, encoded %v with %d more", o.r.Revision, next-1, o.enc != nil, len(o.more))
		}
	}
	if next != rev+1 || len(out) < responses*perResponse/(coalescedEvents+perResponse) {
		t.Errorf("%d responses up to revision %d, want every event up to %d", len(out), next-1, rev)
	}
}
