package server

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/wait"
)

// FuzzPeekRequestID: for anything that decodes as an InternalRaftRequest
// with a header ID, or without a header, the ID read without decoding is
// the decoded request's; garbage is never a found ID of a request that
// decodes otherwise.
func FuzzPeekRequestID(f *testing.F) {
	for _, req := range []*pb.InternalRaftRequest{
		{Header: &pb.RequestHeader{ID: 0x1234_5678_9abc, Username: "root", AuthRevision: 3}, Put: &pb.PutRequest{Key: []byte("k"), Value: []byte("v")}},
		{ID: 77, DeleteRange: &pb.DeleteRangeRequest{Key: []byte("a")}},
		{Put: &pb.PutRequest{Key: []byte("k")}, Header: &pb.RequestHeader{ID: 1 << 63}},
		{ID: 5, Header: &pb.RequestHeader{ID: 6}},
		{},
	} {
		data, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		id, found := peekRequestID(data)
		req := new(pb.InternalRaftRequest)
		if proto.Unmarshal(data, req) != nil {
			return
		}
		if req.Header != nil && req.Header.ID == 0 {
			return // a header without an ID: requestID says 0, the peek may read the old field
		}
		want := requestID(req)
		if want != 0 && (!found || id != want) {
			t.Errorf("peekRequestID = %d, %v; the request's ID is %d", id, found, want)
		}
	})
}

// BenchmarkEntryRequest: the request of an applied put entry, proposed on
// this member (taken from its waiter) or on another (decoded).
func BenchmarkEntryRequest(b *testing.B) {
	req := &pb.InternalRaftRequest{Header: &pb.RequestHeader{ID: 0x1234_5678_9abc},
		Put: &pb.PutRequest{Key: []byte("bench-key-000042"), Value: make([]byte, 256)}}
	data, err := proto.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	for _, local := range []bool{true, false} {
		name := "proposed-elsewhere"
		s := &Server{waiters: wait.NewList[proposal, applyResult]()}
		if local {
			name = "proposed-here"
			s.waiters.Register(req.Header.ID, proposal{req, data})
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.entryRequest(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
