package hashcheck

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/internal/transport"
	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/store"
)

// member is a Member reduced to what answers and asks hash queries: a
// store and IDs.
type member struct {
	id, clusterID uint64
	st            *store.Store
}

func (m *member) ID() uint64                                   { return m.id }
func (m *member) ClusterID() uint64                            { return m.clusterID }
func (m *member) Store() *store.Store                          { return m.st }
func (m *member) Peers() []Peer                                { return nil }
func (m *member) LinearizableReadNotify(context.Context) error { return nil }
func (m *member) RaiseCorrupt(context.Context, uint64) error   { return nil }

// hashKVPeer is a member's checker serving the peer route.
func hashKVPeer(t *testing.T, clusterID uint64) (*member, *Checker, string) {
	t.Helper()
	st, err := store.Open(store.Config{Backend: backend.Config{Path: filepath.Join(t.TempDir(), "db")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := &member{id: 0xa1, clusterID: clusterID, st: st}
	c := New(m, Config{})
	mux := http.NewServeMux()
	mux.Handle(Path, c)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return m, c, srv.URL
}

// TestHashKVPeerRoute: the peer route answers a hash query with the
// store's HashKV and the member's current revision, and its refusals come
// back as the store's errors; a query from another cluster is refused, and
// only GET is served, as etcd's /members/hashkv.
func TestHashKVPeerRoute(t *testing.T) {
	s, c, url := hashKVPeer(t, 0xc1)
	w := s.st.Write() // revisions 2 to 5
	for _, k := range []string{"a", "b", "a", "c"} {
		if _, err := w.Put([]byte(k), []byte("v-"+k), 0); err != nil {
			t.Fatal(err)
		}
		w.End()
		w = s.st.Write()
	}
	if _, err := w.Compact(3); err != nil {
		t.Fatal(err)
	}
	w.End()
	ctx := context.Background()
	for _, rev := range []int64{0, 3, 4, 5} {
		got, err := c.askHashKV(ctx, url, rev)
		if err != nil {
			t.Fatalf("HashKV(%d): %v", rev, err)
		}
		want, err := s.st.HashKV(rev)
		if err != nil {
			t.Fatal(err)
		}
		if got.Hash != want.Hash || got.HashRevision != want.HashRevision || got.CompactRevision != want.CompactRevision ||
			got.Header.Revision != 5 || got.Header.MemberID != s.id || got.Header.ClusterID != s.clusterID {
			t.Errorf("HashKV(%d) over the peer route = %+v, want %+v at revision 5", rev, got, want)
		}
	}
	if _, err := c.askHashKV(ctx, url, 2); !errors.Is(err, store.ErrCompacted) {
		t.Errorf("HashKV(2) after compacting at 3: %v, want %v", err, store.ErrCompacted)
	}
	if _, err := c.askHashKV(ctx, url, 6); !errors.Is(err, store.ErrFutureRev) {
		t.Errorf("HashKV(6) at revision 5: %v, want %v", err, store.ErrFutureRev)
	}
	other := New(&member{id: 0xb2, clusterID: 0xc2}, Config{})
	if _, err := other.askHashKV(ctx, url, 0); !errors.Is(err, errClusterIDMismatch) {
		t.Errorf("a query from another cluster: %v, want %v", err, errClusterIDMismatch)
	}
	req, _ := http.NewRequest(http.MethodPost, url+Path, strings.NewReader(`{"revision":0}`))
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

// TestCompactionRevs: the compaction hash check considers the revisions of
// the last 10 compactions seen, newest first, down to the newest one
// already checked on the whole cluster.
func TestCompactionRevs(t *testing.T) {
	var revs CompactionRevs
	for _, rev := range []int64{0, 5, 5, 3, 8} {
		revs.Observe(rev)
	}
	if got := revs.unchecked(); !slices.Equal(got, []int64{8, 5}) {
		t.Fatalf("unchecked %v, want [8 5]", got)
	}
	revs.checked = 5
	if got := revs.unchecked(); !slices.Equal(got, []int64{8}) {
		t.Fatalf("unchecked after checking 5: %v, want [8]", got)
	}
	for rev := int64(10); rev < 30; rev++ {
		revs.Observe(rev)
	}
	if got := revs.unchecked(); len(got) != 10 || got[0] != 29 || got[9] != 20 {
		t.Fatalf("unchecked after 20 more: %v, want 29 down to 20", got)
	}
}
