package leaderwatch

import (
	"testing"
	"time"
)

// TestWatch: a change of leader closes Changed and cancels UntilChange;
// Lost closes after the grace without a leader, and a new leader opens a
// new one.
func TestWatch(t *testing.T) {
	w := New(20 * time.Millisecond)
	defer w.Stop()
	changed, ctx := w.Changed(), w.UntilChange()
	w.Set(1)
	select {
	case <-changed:
	default:
		t.Fatal("Changed still open after a new leader")
	}
	if ctx.Err() == nil {
		t.Fatal("UntilChange not cancelled after a new leader")
	}
	select {
	case <-w.Lost():
		t.Fatal("Lost closed with a leader")
	case <-time.After(50 * time.Millisecond):
	}
	w.Set(0)
	select {
	case <-w.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost still open long after the grace without a leader")
	}
	w.Set(2)
	select {
	case <-w.Lost():
		t.Fatal("Lost still closed with a leader again")
	default:
	}
}

// TestElected: Elected is when the current leader became known, kept while
// there is none, and moved only by another leader.
func TestElected(t *testing.T) {
	w := New(time.Hour)
	defer w.Stop()
	if !w.Elected().IsZero() {
		t.Fatalf("Elected before any leader: %v", w.Elected())
	}
	before := time.Now()
	w.Set(1)
	first := w.Elected()
	if first.Before(before) || first.After(time.Now()) {
		t.Fatalf("Elected %v, want the time of Set(1), after %v", first, before)
	}
	w.Set(1) // the same leader again
	w.Set(0)
	if got := w.Elected(); !got.Equal(first) {
		t.Fatalf("Elected %v after the same leader and then none, want %v", got, first)
	}
	mid := time.Now()
	w.Set(2)
	if got := w.Elected(); got.Before(mid) {
		t.Fatalf("Elected %v after a new leader, want the time of Set(2), after %v", got, mid)
	}
}
