package store

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnkv/cairn/pkg/backend"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// TestStatsCount: operations are counted as etcd's metrics count them (a
// txn only when it has more than one operation), the live keys survive a
// reopen, and a Stats shared by two stores keeps counting.
func TestStatsCount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	var commits atomic.Int64
	st := &Stats{OnCommit: func(time.Duration) { commits.Add(1) }}
	s, err := Open(Config{Backend: backend.Config{Path: path}, Stats: st})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c", "a"} {
		if _, err := s.Put(&pb.PutRequest{Key: []byte(k), Value: []byte("vv")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DeleteRange(&pb.DeleteRangeRequest{Key: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Range(&pb.RangeRequest{Key: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	txn := &pb.TxnRequest{Success: []*pb.RequestOp{
		{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("d"), Value: []byte("v")}}},
		{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("d")}}},
	}}
	if _, err := s.Txn(txn); err != nil {
		t.Fatal(err)
	}
	if err := s.Backend().ForceCommit(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ got, want int64 }{
		"puts": {st.Puts.Load(), 5}, "deletes": {st.Deletes.Load(), 1}, "ranges": {st.Ranges.Load(), 2},
		"txns": {st.Txns.Load(), 1}, "put bytes": {st.PutBytes.Load(), 4*3 + 2}, "keys": {s.Keys(), 3},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", name, c.got, c.want)
		}
	}
	if commits.Load() == 0 || s.Backend().OpenReads() != 0 {
		t.Errorf("commits %d, open reads %d", commits.Load(), s.Backend().OpenReads())
	}
	s.Close()
	s2, err := Open(Config{Backend: backend.Config{Path: path}, Stats: st})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.Put(&pb.PutRequest{Key: []byte("e")}); err != nil {
		t.Fatal(err)
	}
	if s2.Keys() != 4 || st.Puts.Load() != 6 {
		t.Errorf("after reopening: keys %d, puts %d; want 4 and 6", s2.Keys(), st.Puts.Load())
	}
}
