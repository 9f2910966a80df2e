package lease

import (
	"slices"
	"testing"
	"time"
)

func TestRenew(t *testing.T) {
	e := newEnv(t, Config{})
	e.grant(1, 10)
	_, err := e.renew(1)
	wantErr(t, err, ErrNotPrimary)

	e.l.Promote(0)
	_, err = e.renew(2)
	wantErr(t, err, ErrLeaseNotFound)

	e.clock.Advance(8 * time.Second)
	ttl, err := e.renew(1)
	if err != nil || ttl != 10 {
		t.Fatalf("Renew = %d, %v; want 10", ttl, err)
	}
	if got := e.lookup(1).Expiry; !got.Equal(e.clock.Now().Add(10 * time.Second)) {
		t.Errorf("expiry %v after renew, want now+10s", got.Sub(e.clock.Now()))
	}
	e.clock.Advance(8 * time.Second) // 16 s after grant
	if got := e.tickIDs(); len(got) != 0 {
		t.Fatalf("renewed lease offered: %v", got)
	}
	e.clock.Advance(2 * time.Second)
	if got := e.tickIDs(); !slices.Equal(got, []int64{1}) {
		t.Fatalf("offered %v 10s after renew, want [1]", got)
	}
}

func TestRenewExpiredLease(t *testing.T) {
	e := newEnv(t, Config{})
	e.l.Promote(0)
	e.grant(1, 10)
	e.clock.Advance(10 * time.Second)
	_, err := e.renew(1)
	wantErr(t, err, ErrLeaseNotFound)
	// Not renewed: still offered.
	if got := e.tickIDs(); !slices.Equal(got, []int64{1}) {
		t.Fatalf("offered %v, want [1]", got)
	}
}

func TestRenewClearsCheckpoint(t *testing.T) {
	e := newEnv(t, Config{CheckpointInterval: time.Minute})
	e.grant(1, 600)
	e.checkpoint(1, 30)
	e.l.Promote(0)
	if got := e.lookup(1).Expiry.Sub(e.clock.Now()); got != 30*time.Second {
		t.Fatalf("expiry in %v, want 30s (checkpointed)", got)
	}
	e.clock.Advance(10 * time.Second)
	if ttl, err := e.renew(1); err != nil || ttl != 600 {
		t.Fatalf("Renew = %d, %v; want 600", ttl, err)
	}
	ls := e.lookup(1)
	if ls.RemainingTTL != 0 || !ls.Expiry.Equal(e.clock.Now().Add(600*time.Second)) {
		t.Errorf("after renew: remaining %d, expiry in %v; want 0 and the full 600s", ls.RemainingTTL, ls.Expiry.Sub(e.clock.Now()))
	}
	if _, err := e.renew(1); err != nil { // a second renew queues no second clear
		t.Fatal(err)
	}
	cps := e.l.CheckpointsDue()
	if !slices.Equal(cps, []Checkpoint{{ID: 1}}) {
		t.Fatalf("CheckpointsDue = %v, want one clearing checkpoint of lease 1", cps)
	}
	if cps := e.l.CheckpointsDue(); len(cps) != 0 {
		t.Fatalf("clearing checkpoint returned twice: %v", cps)
	}
	// Applying it clears the record too.
	if r := e.records()[1]; r.RemainingTTL != 30 {
		t.Fatalf("record remaining %d before the clear is applied, want 30", r.RemainingTTL)
	}
	e.checkpoint(1, 0)
	if r := e.records()[1]; r.RemainingTTL != 0 {
		t.Errorf("record remaining %d after the clear, want 0", r.RemainingTTL)
	}
}

func TestRenewedLeaseRevokedBeforeClear(t *testing.T) {
	e := newEnv(t, Config{})
	e.grant(1, 600)
	e.checkpoint(1, 30)
	e.l.Promote(0)
	if _, err := e.renew(1); err != nil {
		t.Fatal(err)
	}
	if err := e.revoke(1); err != nil {
		t.Fatal(err)
	}
	if cps := e.l.CheckpointsDue(); len(cps) != 0 {
		t.Errorf("checkpoint of a revoked lease: %v", cps)
	}
}
