package wait

import (
	"testing"
	"time"
)

// TestList: a triggered ID's result reaches its waiter once, with the
// value registered kept until then; a cancelled or unknown ID is ignored.
func TestList(t *testing.T) {
	l := NewList[string, int]()
	ch := l.Register(1, "one")
	l.Register(2, "two")
	if v, ok := l.Value(1); !ok || v != "one" || l.Len() != 2 {
		t.Fatalf("Value(1) = %q, %v; Len %d", v, ok, l.Len())
	}
	l.Cancel(2)
	l.Trigger(2, 20)
	l.Trigger(3, 30)
	l.Trigger(1, 10)
	if got := <-ch; got != 10 {
		t.Errorf("result %d, want 10", got)
	}
	if _, ok := l.Value(1); ok || l.Len() != 0 {
		t.Errorf("after the trigger: still waiting (Len %d)", l.Len())
	}
}

// TestIndex: a wait ends once the index reaches its value, at once for a
// value already reached; the index never goes back.
func TestIndex(t *testing.T) {
	x := NewIndex()
	five, seven := x.Wait(5), x.Wait(7)
	x.Advance(6)
	select {
	case <-five:
	default:
		t.Fatal("the wait for 5 is still open at 6")
	}
	select {
	case <-seven:
		t.Fatal("the wait for 7 ended at 6")
	default:
	}
	x.Advance(3)
	if x.Current() != 6 {
		t.Errorf("Current %d after advancing to 3 from 6, want 6", x.Current())
	}
	<-x.Wait(6)
	x.Advance(7)
	<-seven
}

// TestDeadlinesCloseOnTimeAndShareAGranule: a deadline's channel closes no
// sooner than asked and within a granule of it, and the deadlines that
// fall in one granule get one channel.
func TestDeadlinesCloseOnTimeAndShareAGranule(t *testing.T) {
	const granule = 20 * time.Millisecond
	x := NewDeadlines(granule)
	for _, d := range []time.Duration{0, time.Millisecond, 50 * time.Millisecond} {
		start := time.Now()
		<-x.After(d)
		if took := time.Since(start); took < d || took > d+granule+50*time.Millisecond {
			t.Errorf("After(%v) closed after %v", d, took)
		}
	}
	// A thousand deadlines asked for within a millisecond fall in one
	// granule, or two when they straddle a boundary.
	x = NewDeadlines(granule)
	chans := map[<-chan struct{}]bool{}
	for range 1000 {
		chans[x.After(time.Second)] = true
	}
	if len(chans) > 2 {
		t.Errorf("1000 deadlines asked for at once got %d channels", len(chans))
	}
}
