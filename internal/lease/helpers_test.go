package lease

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/store"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// openStore opens a store at path and closes it when the test ends.
func openStore(t testing.TB, path string) *store.Store {
	t.Helper()
	s, err := store.Open(store.Config{Backend: backend.Config{Path: path}})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testEnv is a lessor on a real store in a temporary directory, with a
// fake clock.
type testEnv struct {
	t     testing.TB
	path  string
	s     *store.Store
	l     *Lessor
	clock *fakeClock
}

// newEnv opens a fresh store and a lessor on it; cfg.Now is replaced by
// the fake clock.
func newEnv(t testing.TB, cfg Config) *testEnv {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db")
	e := &testEnv{t: t, path: path, s: openStore(t, path), clock: newFakeClock()}
	cfg.Now = e.clock.Now
	l, err := New(e.s, cfg)
	if err != nil {
		t.Fatalf("new lessor: %v", err)
	}
	e.l = l
	return e
}

// apply runs fn in one store write transaction, as the apply loop does.
func (e *testEnv) apply(fn func(w *store.WriteTxn) error) error {
	e.t.Helper()
	w := e.s.Write()
	err := fn(w)
	if endErr := w.End(); endErr != nil {
		e.t.Fatalf("end write txn: %v", endErr)
	}
	return err
}

// renew renews lease id as the server does once a round has just
// confirmed the primary's leadership (the window is wide: another
// goroutine may move the fake clock in between).
func (e *testEnv) renew(id int64) (int64, error) {
	e.l.Confirmed(e.l.StartConfirmation())
	return e.l.Renew(id, time.Hour)
}

func (e *testEnv) grant(id, ttl int64) Lease {
	e.t.Helper()
	var ls Lease
	err := e.apply(func(w *store.WriteTxn) (err error) {
		ls, err = e.l.Grant(w, id, ttl)
		return err
	})
	if err != nil {
		e.t.Fatalf("grant %d: %v", id, err)
	}
	return ls
}

func (e *testEnv) revoke(id int64) error {
	e.t.Helper()
	return e.apply(func(w *store.WriteTxn) error { return e.l.Revoke(w, id) })
}

func (e *testEnv) checkpoint(id, remaining int64) {
	e.t.Helper()
	if err := e.apply(func(w *store.WriteTxn) error { return e.l.Checkpoint(w, id, remaining) }); err != nil {
		e.t.Fatalf("checkpoint %d: %v", id, err)
	}
}

func (e *testEnv) put(key string, lease int64) {
	e.t.Helper()
	if _, err := e.s.Put(&pb.PutRequest{Key: []byte(key), Value: []byte("v"), Lease: lease}); err != nil {
		e.t.Fatalf("put %s: %v", key, err)
	}
}

// exists reports whether key is live in the store.
func (e *testEnv) exists(key string) bool {
	e.t.Helper()
	resp, err := e.s.Range(&pb.RangeRequest{Key: []byte(key)})
	if err != nil {
		e.t.Fatalf("range %s: %v", key, err)
	}
	return len(resp.Kvs) == 1
}

// records returns the lease bucket as a map by ID.
func (e *testEnv) records() map[int64]store.LeaseRecord {
	e.t.Helper()
	recs, err := e.s.Leases()
	if err != nil {
		e.t.Fatalf("store leases: %v", err)
	}
	m := make(map[int64]store.LeaseRecord, len(recs))
	for _, r := range recs {
		m[r.ID] = r
	}
	return m
}

func (e *testEnv) lookup(id int64) Lease {
	e.t.Helper()
	ls, ok := e.l.Lookup(id)
	if !ok {
		e.t.Fatalf("lease %d not found", id)
	}
	return ls
}

// tickIDs returns the IDs that Tick offers now.
func (e *testEnv) tickIDs() []int64 {
	var ids []int64
	for _, ls := range e.l.Tick() {
		ids = append(ids, ls.ID)
	}
	return ids
}

func wantErr(t testing.TB, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("error %v, want %v", got, want)
	}
}
