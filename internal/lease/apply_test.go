package lease

import (
	"slices"
	"testing"
	"time"

	"github.com/cairnkv/cairn/pkg/store"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

func TestGrantRaisesTTLAndPersists(t *testing.T) {
	e := newEnv(t, Config{MinTTL: 5})
	for _, c := range []struct{ id, ttl, want int64 }{
		{3, 1, 5}, {1, 0, 5}, {2, -7, 5}, {4, 100, 100}, {5, MaxLeaseTTL, MaxLeaseTTL},
	} {
		got := e.grant(c.id, c.ttl)
		if got.ID != c.id || got.TTL != c.want || got.RemainingTTL != 0 || !got.Expiry.IsZero() {
			t.Errorf("grant(%d, %d) = %+v, want TTL %d and no expiry (not primary)", c.id, c.ttl, got, c.want)
		}
		if l := e.lookup(c.id); l != got {
			t.Errorf("lookup %d = %+v, want %+v", c.id, l, got)
		}
		if r := e.records()[c.id]; r != (store.LeaseRecord{ID: c.id, TTL: c.want}) {
			t.Errorf("record of %d = %+v", c.id, r)
		}
	}
	if got := e.l.Leases(); !slices.Equal(got, []int64{1, 2, 3, 4, 5}) {
		t.Errorf("Leases() = %v", got)
	}
	if _, ok := e.l.Lookup(99); ok {
		t.Error("lookup of an unknown lease found one")
	}
}

func TestGrantErrors(t *testing.T) {
	e := newEnv(t, Config{})
	e.grant(7, 10)
	grant := func(id, ttl int64) error {
		return e.apply(func(w *store.WriteTxn) error {
			_, err := e.l.Grant(w, id, ttl)
			return err
		})
	}
	wantErr(t, grant(0, 10), ErrLeaseNotFound)
	wantErr(t, grant(8, MaxLeaseTTL+1), ErrLeaseTTLTooLarge)
	wantErr(t, grant(7, 20), ErrLeaseExists)
	if got := e.lookup(7).TTL; got != 10 {
		t.Errorf("duplicate grant changed the TTL to %d", got)
	}
	if recs := e.records(); len(recs) != 1 || recs[7].TTL != 10 {
		t.Errorf("records after failed grants: %+v", recs)
	}
}

func TestRevokeDeletesKeysInOneRevision(t *testing.T) {
	e := newEnv(t, Config{})
	e.grant(1, 10)
	e.grant(2, 10)
	e.grant(3, 10) // no keys
	// Attached in an order unlike key order, at different revisions.
	for _, k := range []string{"c", "a", "e", "b"} {
		e.put(k, 1)
	}
	e.put("d", 2)
	e.put("free", 0)
	e.put("e", 0) // re-put without lease: detached from lease 1

	ws := e.s.NewWatchStream()
	defer ws.Close()
	if _, err := ws.Watch(store.AutoWatchID, []byte{0}, []byte{0}, 0, store.WatchOptions{}); err != nil {
		t.Fatal(err)
	}
	before := e.s.Rev()
	if err := e.revoke(1); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if got := e.s.Rev(); got != before+1 {
		t.Fatalf("revision %d after revoke, want %d (one revision)", got, before+1)
	}
	for k, want := range map[string]bool{"a": false, "b": false, "c": false, "d": true, "e": true, "free": true} {
		if e.exists(k) != want {
			t.Errorf("key %s exists=%v, want %v", k, !want, want)
		}
	}
	select {
	case resp := <-ws.Chan():
		var keys []string
		for _, ev := range resp.Events {
			if ev.Type != mvccpb.DELETE || ev.Kv.ModRevision != before+1 {
				t.Errorf("event %v at %d, want DELETE at %d", ev.Type, ev.Kv.ModRevision, before+1)
			}
			keys = append(keys, string(ev.Kv.Key))
		}
		if !slices.Equal(keys, []string{"a", "b", "c"}) {
			t.Errorf("deleted %q, want [a b c] in key order", keys)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch response for the revoke")
	}
	if _, ok := e.l.Lookup(1); ok {
		t.Error("revoked lease still in the lessor")
	}
	if _, ok := e.records()[1]; ok {
		t.Error("revoked lease still in the lease bucket")
	}
	if got := e.s.LeaseKeys(1); len(got) != 0 {
		t.Errorf("keys still attached: %q", got)
	}
	wantErr(t, e.revoke(1), ErrLeaseNotFound)
	wantErr(t, e.revoke(42), ErrLeaseNotFound)

	// A lease without keys goes without a new revision.
	rev := e.s.Rev()
	if err := e.revoke(3); err != nil {
		t.Fatal(err)
	}
	if e.s.Rev() != rev {
		t.Errorf("revoking a lease without keys moved the revision %d → %d", rev, e.s.Rev())
	}
	if got := e.l.Leases(); !slices.Equal(got, []int64{2}) {
		t.Errorf("Leases() = %v, want [2]", got)
	}
}

func TestRevokeOnPrimaryStopsTracking(t *testing.T) {
	e := newEnv(t, Config{})
	e.l.Promote(0)
	e.grant(1, 10)
	e.grant(2, 10)
	if err := e.revoke(1); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	if got := e.tickIDs(); !slices.Equal(got, []int64{2}) {
		t.Errorf("Tick offered %v, want [2]", got)
	}
	wantErr(t, func() error { _, err := e.renew(1); return err }(), ErrLeaseNotFound)
}

func TestCheckpointApply(t *testing.T) {
	e := newEnv(t, Config{})
	e.grant(1, 60)
	e.checkpoint(1, 42)
	if got := e.lookup(1).RemainingTTL; got != 42 {
		t.Errorf("remaining %d, want 42", got)
	}
	if r := e.records()[1]; r != (store.LeaseRecord{ID: 1, TTL: 60, RemainingTTL: 42}) {
		t.Errorf("record %+v", r)
	}
	e.checkpoint(1, 0) // clears
	if got := e.lookup(1).RemainingTTL; got != 0 {
		t.Errorf("remaining %d after clearing", got)
	}
	if r := e.records()[1]; r != (store.LeaseRecord{ID: 1, TTL: 60}) {
		t.Errorf("record %+v after clearing", r)
	}
	e.checkpoint(99, 5) // unknown: ignored
	if _, ok := e.records()[99]; ok {
		t.Error("checkpoint of an unknown lease created a record")
	}
	if _, ok := e.l.Lookup(99); ok {
		t.Error("checkpoint of an unknown lease created a lease")
	}
}

// The apply loop checks puts with CheckLease: a put names a lease only
// while it exists in the log's order, and a lessor recovered from the db
// (a restart, a snapshot) answers as the one that applied the log.
func TestCheckLeaseForPuts(t *testing.T) {
	e := newEnv(t, Config{})
	putWithCheck := func(key string, lease int64) error {
		return e.apply(func(w *store.WriteTxn) error {
			w.CheckLeases(e.l.CheckLease)
			_, err := w.ExecPut(&pb.PutRequest{Key: []byte(key), Value: []byte("v"), Lease: lease})
			return err
		})
	}
	e.grant(1, 60)
	e.grant(2, 60)
	if err := putWithCheck("a", 1); err != nil {
		t.Fatalf("put on a granted lease: %v", err)
	}
	if err := e.revoke(1); err != nil {
		t.Fatal(err)
	}
	wantErr(t, putWithCheck("b", 1), ErrLeaseNotFound)
	wantErr(t, putWithCheck("c", 3), ErrLeaseNotFound)
	if e.exists("a") || e.exists("b") || e.exists("c") {
		t.Errorf("keys after the revocation and the refused puts: a %v b %v c %v, want none", e.exists("a"), e.exists("b"), e.exists("c"))
	}
	recovered, err := New(e.s, Config{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]error{1: ErrLeaseNotFound, 2: nil, 3: ErrLeaseNotFound} {
		if got, applied := recovered.CheckLease(id), e.l.CheckLease(id); got != want || applied != want {
			t.Errorf("CheckLease(%d): recovered %v, applying lessor %v; want %v", id, got, applied, want)
		}
	}
}
