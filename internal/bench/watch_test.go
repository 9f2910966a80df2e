package bench

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

func TestPrefixRangeEnd(t *testing.T) {
	for _, c := range []struct{ prefix, want string }{
		{"a", "b"},
		{"/bench/", "/bench0"},
		{"a\xff", "b"},
		{"a\xff\xff", "b"},
		{"\xff\xff", "\x00"},
	} {
		if got := prefixRangeEnd([]byte(c.prefix)); !bytes.Equal(got, []byte(c.want)) {
			t.Errorf("prefixRangeEnd(%q) = %q, want %q", c.prefix, got, c.want)
		}
	}
}

func TestWatchFrameReadsWhatTheBenchmarkUses(t *testing.T) {
	stamp := func(nanos uint64, size int) []byte {
		v := make([]byte, size)
		binary.BigEndian.PutUint64(v, nanos)
		return v
	}
	resp := &pb.WatchResponse{
		Header:       &pb.ResponseHeader{ClusterId: 1, MemberId: 2, Revision: 300, RaftTerm: 4},
		WatchId:      7,
		Created:      true,
		Canceled:     true,
		CancelReason: "why not",
		Events: []*mvccpb.Event{
			{Kv: &mvccpb.KeyValue{Key: []byte("a"), ModRevision: 299, Value: stamp(11, 64)},
				PrevKv: &mvccpb.KeyValue{Key: []byte("a"), Value: stamp(99, 8)}},
			{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte("b"), ModRevision: 300}},
			{Kv: &mvccpb.KeyValue{Key: []byte("c"), Value: []byte("short")}},
			{Kv: &mvccpb.KeyValue{Key: []byte("d"), Lease: 5, Value: stamp(1<<62, 8)}},
		},
	}
	wire, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var f watchFrame
	if err := f.unmarshal(wire); err != nil {
		t.Fatal(err)
	}
	if !f.created || !f.canceled || f.cancelReason != "why not" || !slices.Equal(f.sent, []int64{11, 1 << 62}) {
		t.Errorf("read %+v, want created, canceled, reason %q and sent [11 %d]", f, "why not", int64(1<<62))
	}

	// A frame is reset by the next response, and reading one allocates nothing.
	plain, err := proto.Marshal(&pb.WatchResponse{WatchId: 7, Events: resp.Events[:1]})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.unmarshal(plain); err != nil {
		t.Fatal(err)
	}
	if f.created || f.canceled || f.cancelReason != "" || !slices.Equal(f.sent, []int64{11}) {
		t.Errorf("read %+v after a plain event, want only sent [11]", f)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = f.unmarshal(plain) }); allocs != 0 {
		t.Errorf("reading a response allocated %v times, want 0", allocs)
	}

	for _, cut := range []int{1, len(wire) / 2, len(wire) - 1} {
		if err := f.unmarshal(wire[:cut]); err == nil {
			t.Errorf("a response cut to %d of its %d bytes was read without an error", cut, len(wire))
		}
	}
}
