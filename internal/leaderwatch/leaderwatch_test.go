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
