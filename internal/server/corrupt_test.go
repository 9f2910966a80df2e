package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"

	"github.com/cairnkv/cairn/internal/transport"
	"github.com/cairnkv/cairn/pkg/store"
)

// hashKVPeer is a member reduced to what answers and asks hash queries: a
// store, IDs, a peer client and the peer route.
func hashKVPeer(t *testing.T, clusterID uint64) (*Server, string) {
	t.Helper()
	st, err := store.Open(store.Config{Backend: store.BackendConfig{Path: filepath.Join(t.TempDir(), "db")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := &Server{id: 0xa1, clusterID: clusterID, log: slog.New(slog.DiscardHandler), peerClient: http.DefaultClient}
	s.store.Store(st)
	mux := http.NewServeMux()
	mux.HandleFunc(pathHashKV, s.serveHashKV)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// TestHashKVPeerRoute: the peer route answers a hash query with the
// store's HashKV and the member's current revision, and its refusals come
// back as the store's errors; a query from another cluster is refused, and
// only GET is served, as etcd's /members/hashkv.
func TestHashKVPeerRoute(t *testing.T) {
	s, url := hashKVPeer(t, 0xc1)
	w := s.st().Write() // revisions 2 to 5
	for _, k := range []string{"a", "b", "a", "c"} {
		if _, err := w.Put([]byte(k), []byte("v-"+k), 0); err != nil {
			t.Fatal(err)
		}
		w.End()
		w = s.st().Write()
	}
	if _, err := w.Compact(3); err != nil {
		t.Fatal(err)
	}
	w.End()
	ctx := context.Background()
	for _, rev := range []int64{0, 3, 4, 5} {
		got, err := s.askHashKV(ctx, url, rev)
		if err != nil {
			t.Fatalf("HashKV(%d): %v", rev, err)
		}
		want, err := s.st().HashKV(rev)
		if err != nil {
			t.Fatal(err)
		}
		if got.Hash != want.Hash || got.HashRevision != want.HashRevision || got.CompactRevision != want.CompactRevision ||
			got.Header.Revision != 5 || got.Header.MemberID != s.id || got.Header.ClusterID != s.clusterID {
			t.Errorf("HashKV(%d) over the peer route = %+v, want %+v at revision 5", rev, got, want)
		}
	}
	if _, err := s.askHashKV(ctx, url, 2); !errors.Is(err, store.ErrCompacted) {
		t.Errorf("HashKV(2) after compacting at 3: %v, want %v", err, store.ErrCompacted)
	}
	if _, err := s.askHashKV(ctx, url, 6); !errors.Is(err, store.ErrFutureRev) {
		t.Errorf("HashKV(6) at revision 5: %v, want %v", err, store.ErrFutureRev)
	}
	other := &Server{id: 0xb2, clusterID: 0xc2, peerClient: http.DefaultClient}
	if _, err := other.askHashKV(ctx, url, 0); !errors.Is(err, errClusterIDMismatch) {
		t.Errorf("a query from another cluster: %v, want %v", err, errClusterIDMismatch)
	}
	req, _ := http.NewRequest(http.MethodPost, url+pathHashKV, strings.NewReader(`{"revision":0}`))
	req.Header.Set(transport.HeaderClusterID, "c1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d, want %d", resp.StatusCode, http.StatusMethodNotAllowed)
	}
}

// TestRefusedWhenCorrupt: what fails while CORRUPT is raised is what fails
// on etcd 3.7.3: writes, write txns (nested too), compactions, lease grants
// and revokes; not read-only txns, alarms or membership attributes.
func TestRefusedWhenCorrupt(t *testing.T) {
	put := &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("k")}}}
	del := &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("k")}}}
	get := &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("k")}}}
	nested := func(ops ...*pb.RequestOp) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Success: ops}}}
	}
	for _, c := range []struct {
		name string
		req  *pb.InternalRaftRequest
		want bool
	}{
		{"put", &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k")}}, true},
		{"delete", &pb.InternalRaftRequest{DeleteRange: &pb.DeleteRangeRequest{Key: []byte("k")}}, true},
		{"compaction", &pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: 2}}, true},
		{"lease grant", &pb.InternalRaftRequest{LeaseGrant: &pb.LeaseGrantRequest{TTL: 5}}, true},
		{"lease revoke", &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: 5}}, true},
		{"txn with a put", &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{get, put}}}, true},
		{"txn with a delete on failure", &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Failure: []*pb.RequestOp{del}}}, true},
		{"txn with a nested put", &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{nested(get, put)}}}, true},
		{"read-only txn", &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{get, nested(get)}}}, false},
		{"alarm", &pb.InternalRaftRequest{Alarm: &pb.AlarmRequest{Action: pb.AlarmRequest_DEACTIVATE, Alarm: pb.AlarmType_CORRUPT}}, false},
		{"lease checkpoint", &pb.InternalRaftRequest{LeaseCheckpoint: &pb.LeaseCheckpointRequest{}}, false},
		{"member attributes", &pb.InternalRaftRequest{ClusterMemberAttrSet: &membershippb.ClusterMemberAttrSetRequest{}}, false},
	} {
		if got := refusedWhenCorrupt(c.req); got != c.want {
			t.Errorf("%s: refused %v, want %v", c.name, got, c.want)
		}
	}
}

// TestCompactionRevs: the compaction hash check considers the revisions of
// the last 10 compactions seen, newest first, down to the newest one
// already checked on the whole cluster.
func TestCompactionRevs(t *testing.T) {
	var c compactionRevs
	for _, rev := range []int64{0, 5, 5, 3, 8} {
		c.observe(rev)
	}
	if got := c.unchecked(); !slices.Equal(got, []int64{8, 5}) {
		t.Fatalf("unchecked %v, want [8 5]", got)
	}
	c.checked = 5
	if got := c.unchecked(); !slices.Equal(got, []int64{8}) {
		t.Fatalf("unchecked after checking 5: %v, want [8]", got)
	}
	for rev := int64(10); rev < 30; rev++ {
		c.observe(rev)
	}
	if got := c.unchecked(); len(got) != 10 || got[0] != 29 || got[9] != 20 {
		t.Fatalf("unchecked after 20 more: %v, want 29 down to 20", got)
	}
}
