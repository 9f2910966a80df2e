package lease

import (
	"testing"
	"time"
)

// TestRenewNeedsARecentConfirmation: the primary renews only under a
// confirmation begun less than the window ago, in its term of primacy.
func TestRenewNeedsARecentConfirmation(t *testing.T) {
	e := newEnv(t, Config{})
	e.grant(1, 10)
	e.l.Confirmed(e.l.StartConfirmation())
	_, err := e.l.Renew(1, time.Hour)
	wantErr(t, err, ErrNotPrimary)
	e.l.Promote(0)
	_, err = e.l.Renew(1, time.Hour)
	wantErr(t, err, ErrNotConfirmed) // a promotion confirms nothing
	c := e.l.StartConfirmation()
	e.clock.Advance(time.Second)
	e.l.Confirmed(c)
	if ttl, err := e.l.Renew(1, 1500*time.Millisecond); err != nil || ttl != 10 {
		t.Fatalf("Renew under a confirmation begun 1s ago, window 1.5s = %d, %v; want 10", ttl, err)
	}
	_, err = e.l.Renew(1, time.Second)
	wantErr(t, err, ErrNotConfirmed)
	// An older round that ends later leaves the newer confirmation.
	e.l.Confirmed(Confirmation{term: c.term, At: c.At.Add(-time.Second)})
	if _, err := e.l.Renew(1, 1500*time.Millisecond); err != nil {
		t.Fatalf("an older round replaced the newer confirmation: %v", err)
	}
	// A round begun before a Demote and a Promote confirms nothing.
	stale := e.l.StartConfirmation()
	e.l.Demote()
	e.l.Promote(0)
	e.l.Confirmed(stale)
	_, err = e.l.Renew(1, time.Hour)
	wantErr(t, err, ErrNotConfirmed)
}

// TestConfirmedSince: a round counts for a wait begun before it, not for
// one begun after; a new term of primacy ends the wait.
func TestConfirmedSince(t *testing.T) {
	e := newEnv(t, Config{})
	e.l.Promote(0)
	first := e.l.StartConfirmation()
	e.clock.Advance(time.Millisecond)
	since := e.l.StartConfirmation()
	if ok, err := e.l.ConfirmedSince(since); ok || err != nil {
		t.Fatalf("ConfirmedSince before any round = %v, %v", ok, err)
	}
	e.l.Confirmed(first)
	if ok, err := e.l.ConfirmedSince(since); ok || err != nil {
		t.Fatalf("ConfirmedSince after a round begun earlier = %v, %v", ok, err)
	}
	e.clock.Advance(time.Millisecond)
	e.l.Confirmed(e.l.StartConfirmation())
	if ok, err := e.l.ConfirmedSince(since); !ok || err != nil {
		t.Fatalf("ConfirmedSince after a round begun later = %v, %v", ok, err)
	}
	e.l.Demote()
	if _, err := e.l.ConfirmedSince(since); err != ErrNotPrimary {
		t.Fatalf("ConfirmedSince after a Demote: %v, want ErrNotPrimary", err)
	}
	e.l.Promote(0)
	if _, err := e.l.ConfirmedSince(since); err != ErrNotPrimary {
		t.Fatalf("ConfirmedSince of an earlier term: %v, want ErrNotPrimary", err)
	}
}

// TestConfirmationChanged: the channel closes when a round is recorded and
// when primacy changes, not for a round that counts for nothing.
func TestConfirmationChanged(t *testing.T) {
	e := newEnv(t, Config{})
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	ch := e.l.ConfirmationChanged()
	e.l.Confirmed(e.l.StartConfirmation()) // not primary: nothing
	if closed(ch) {
		t.Fatal("closed by a round on a lessor that is not primary")
	}
	e.l.Promote(0)
	if !closed(ch) {
		t.Fatal("not closed by a Promote")
	}
	ch = e.l.ConfirmationChanged()
	c := e.l.StartConfirmation()
	e.l.Confirmed(c)
	if !closed(ch) {
		t.Fatal("not closed by a round")
	}
	ch = e.l.ConfirmationChanged()
	e.l.Confirmed(c) // the same round again: nothing new
	if closed(ch) {
		t.Fatal("closed by a round that confirms nothing new")
	}
	e.l.Demote()
	if !closed(ch) {
		t.Fatal("not closed by a Demote")
	}
}

// TestExpiredBefore: a lease is revocable under a confirmation only if it
// had expired when the round began, in the same term of primacy.
func TestExpiredBefore(t *testing.T) {
	e := newEnv(t, Config{})
	e.grant(1, 10)
	e.grant(2, 10)
	e.l.Promote(0)
	e.clock.Advance(10 * time.Second)
	e.tickIDs()
	c := e.l.StartConfirmation()
	if !e.l.ExpiredBefore(1, c) || !e.l.ExpiredBefore(2, c) {
		t.Fatal("leases expired before the round are not revocable under it")
	}
	if e.l.ExpiredBefore(3, c) {
		t.Fatal("an unknown lease is revocable")
	}
	early := c
	early.At = early.At.Add(-time.Second)
	if e.l.ExpiredBefore(1, early) {
		t.Fatal("a round begun before the lease expired confirms its revocation")
	}
	// A new term restarts the clocks: the round no longer counts.
	e.l.Demote()
	e.l.Promote(0)
	if e.l.ExpiredBefore(1, c) {
		t.Fatal("a round of an earlier term confirms a revocation")
	}
	c = e.l.StartConfirmation()
	if e.l.ExpiredBefore(1, c) {
		t.Fatal("a lease whose clock the promotion restarted is revocable")
	}
}
