package api

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// TestRangeOverGRPCAnswersAsTheStore: ranges answered in their wire form
// (and the sorted one, which takes the decoding path) reach a gRPC client
// as the store's answer with the member's full header, as before.
func TestRangeOverGRPCAnswersAsTheStore(t *testing.T) {
	m := startInProcess(t, 1, nil)[0]
	kv := pb.NewKVClient(m.dial(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, k := range []string{"a", "b", "c", "b"} {
		if _, err := kv.Put(ctx, &pb.PutRequest{Key: []byte(k), Value: []byte("v-" + k)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, req := range []*pb.RangeRequest{
		{Key: []byte("a"), RangeEnd: []byte("z")},
		{Key: []byte("a"), RangeEnd: []byte("z"), Limit: 2},
		{Key: []byte("a"), RangeEnd: []byte("z"), KeysOnly: true, Serializable: true},
		{Key: []byte("a"), RangeEnd: []byte("z"), CountOnly: true},
		{Key: []byte("a"), RangeEnd: []byte("z"), SortOrder: pb.RangeRequest_DESCEND},
	} {
		got, err := kv.Range(ctx, req)
		if err != nil {
			t.Fatalf("%v: %v", req, err)
		}
		want, err := m.s.Store().Range(req)
		if err != nil {
			t.Fatal(err)
		}
		want.Header = m.a.header(want.Header.Revision)
		if !proto.Equal(got, want) {
			t.Errorf("%v:\n got %v\nwant %v", req, got, want)
		}
		if got.Header.ClusterId == 0 || got.Header.MemberId == 0 || got.Header.RaftTerm == 0 {
			t.Errorf("%v: header %v", req, got.Header)
		}
	}
	if _, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("a"), Revision: 1 << 40}); err == nil || !strings.Contains(err.Error(), "future revision") {
		t.Errorf("future revision: %v", err)
	}
}
