package lease

import (
	"testing"
	"time"
)

func TestConfirmationCountsInItsTermOnly(t *testing.T) {
	e := newEnv(t, Config{})
	c := e.l.StartConfirmation()
	e.l.Confirmed(c)
	if e.l.ConfirmedWithin(time.Hour) {
		t.Fatal("a lessor that is not primary counts a confirmation")
	}
	e.l.Promote(0)
	c = e.l.StartConfirmation()
	e.clock.Advance(time.Second)
	e.l.Confirmed(c)
	if !e.l.ConfirmedWithin(1500 * time.Millisecond) {
		t.Fatal("a confirmation begun 1s ago does not count within 1.5s")
	}
	if e.l.ConfirmedWithin(time.Second) {
		t.Fatal("a confirmation begun 1s ago counts within 1s")
	}
	// A round begun before a Demote and a Promote confirms nothing.
	stale := e.l.StartConfirmation()
	e.l.Demote()
	e.l.Promote(0)
	e.l.Confirmed(stale)
	if e.l.ConfirmedWithin(time.Hour) {
		t.Fatal("a round begun in an earlier term counts")
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
