package lease

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cairnkv/cairn/pkg/store"
)

func TestRecoverAfterReopen(t *testing.T) {
	e := newEnv(t, Config{MinTTL: 5})
	e.grant(1, 60)
	e.grant(2, 30)
	e.grant(3, 10)
	e.checkpoint(2, 12)
	if err := e.revoke(3); err != nil {
		t.Fatal(err)
	}
	e.put("a", 1)
	e.put("b", 1)
	// A record with a TTL below the minimum (written by a member with a
	// smaller minimum).
	if err := e.apply(func(w *store.WriteTxn) error { return w.PutLease(store.LeaseRecord{ID: 4, TTL: 1}) }); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Close(); err != nil {
		t.Fatal(err)
	}

	s := openStore(t, e.path)
	l, err := New(s, Config{MinTTL: 5, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Leases(); !slices.Equal(got, []int64{1, 2, 4}) {
		t.Fatalf("recovered %v, want [1 2 4]", got)
	}
	for id, want := range map[int64]Lease{1: {ID: 1, TTL: 60}, 2: {ID: 2, TTL: 30, RemainingTTL: 12}, 4: {ID: 4, TTL: 5}} {
		if got, _ := l.Lookup(id); got != want {
			t.Errorf("lease %d = %+v, want %+v", id, got, want)
		}
	}
	if l.IsPrimary() {
		t.Error("a recovered lessor is primary")
	}
	l.Promote(0)
	now := e.clock.Now()
	if ls, _ := l.Lookup(2); !ls.Expiry.Equal(now.Add(12 * time.Second)) {
		t.Errorf("lease 2 expires in %v, want its checkpointed 12s", ls.Expiry.Sub(now))
	}
	info, err := l.TimeToLive(1, true)
	if err != nil || len(info.Keys) != 2 {
		t.Fatalf("TimeToLive after reopen: %+v, %v", info, err)
	}

	// Revoking after the restart deletes the keys attached before it.
	w := s.Write()
	err = l.Revoke(w, 1)
	if endErr := w.End(); err != nil || endErr != nil {
		t.Fatalf("revoke: %v, %v", err, endErr)
	}
	if got := s.LeaseKeys(1); len(got) != 0 {
		t.Errorf("keys %q left after revoke", got)
	}
}

// Recover replaces the whole state, as after a snapshot install.
func TestRecoverReplacesState(t *testing.T) {
	e := newEnv(t, Config{})
	e.grant(1, 10)
	e.grant(2, 10)
	e.l.Promote(0)

	other := newEnv(t, Config{})
	other.grant(3, 20)
	other.put("k", 3)

	e.clock.Advance(5 * time.Second)
	if err := e.l.Recover(other.s); err != nil {
		t.Fatal(err)
	}
	if got := e.l.Leases(); !slices.Equal(got, []int64{3}) {
		t.Fatalf("Leases() = %v after Recover, want [3]", got)
	}
	if ls := e.lookup(3); !ls.Expiry.Equal(e.clock.Now().Add(20 * time.Second)) {
		t.Errorf("primary: expiry in %v after Recover, want 20s", ls.Expiry.Sub(e.clock.Now()))
	}
	info, err := e.l.TimeToLive(3, true)
	if err != nil || len(info.Keys) != 1 || string(info.Keys[0]) != "k" {
		t.Errorf("TimeToLive reads the new store: %+v, %v", info, err)
	}
	e.clock.Advance(10 * time.Second) // past the old leases' expiry
	if got := e.tickIDs(); len(got) != 0 {
		t.Errorf("offered %v: leases of the replaced state", got)
	}
}

func TestRecoverRefusesCorruptRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openStore(t, path)
	w := s.Write()
	// A varint that never ends.
	err := w.Backend().Put(store.BucketLease, []byte{0, 0, 0, 0, 0, 0, 0, 1}, []byte{0x08, 0xff})
	if endErr := w.End(); err != nil || endErr != nil {
		t.Fatal(err, endErr)
	}
	if _, err := New(s, Config{}); err == nil {
		t.Fatal("New accepted an undecodable lease record")
	}
}
