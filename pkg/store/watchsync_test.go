package store

import (
	"fmt"
	"testing"
	"time"
)

// putHistory writes n puts under prefix p/ (revisions 2..n+1 of a fresh
// store).
func putHistory(t *testing.T, s *Store, n int) {
	t.Helper()
	for i := range n {
		mustPut(t, s, fmt.Sprintf("p/%d", i%100), "v")
	}
}

// readAll takes every response of ws until each of its watchers in want
// has had the events up to last, checking that each gets every revision
// once, in order, and calling after (if not nil) after each take.
func readAll(t *testing.T, ws *WatchStream, want []WatchID, last int64, after func(WatchResponse)) {
	t.Helper()
	next := make(map[WatchID]int64)
	for _, id := range want {
		next[id] = 2
	}
	for done := 0; done < len(want); {
		r := nextResponse(t, ws)
		ws.EventsReceived(len(r.Events))
		for _, ev := range r.Events {
			if ev.Kv.ModRevision != next[r.WatchID] {
				t.Fatalf("watcher %d: event at %d, want %d", r.WatchID, ev.Kv.ModRevision, next[r.WatchID])
			}
			next[r.WatchID]++
			if next[r.WatchID] == last+1 {
				done++
			}
		}
		if after != nil {
			after(r)
		}
	}
}

// A reader is given one stretch of history per watcher at a time: what
// the catch-up holds in memory is a few stretches, not the whole history
// queued for each watcher. It held 128 responses of 1,000 events for a
// watcher alone on its stream (the peak RSS of 1,000 watchers catching up
// 100,000 revisions was 400 MB; 240 MB with this). The watchers reach a
// stretch of the bulk of the history in different rounds and share one
// encoding of it.
func TestCatchUpGivesAReaderOneStretchAtATime(t *testing.T) {
	const watchers, windows = 10, 5
	s := openTestStore(t)
	putHistory(t, s, windows*historyRevsPerRound)
	last := s.Rev()
	ws := s.NewWatchStream()
	defer ws.Close()
	var ids []WatchID
	for range watchers {
		id, err := ws.Watch(AutoWatchID, []byte("p/"), []byte("p0"), 2, WatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Nothing is read meanwhile: the stream fills with one stretch per
	// watcher, and no more.
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); {
		if n := len(ws.Chan()); n > watchers {
			t.Fatalf("%d responses queued for %d watchers that have taken nothing", n, watchers)
		}
	}
	if n := len(ws.Chan()); n != watchers {
		t.Fatalf("%d responses queued after 300 ms, want one per watcher (%d)", n, watchers)
	}
	runs := make(map[int64]*EncodedEvents) // the run of each stretch
	readAll(t, ws, ids, last, func(r WatchResponse) {
		if n := len(ws.Chan()); n > watchers {
			t.Fatalf("%d responses queued for %d watchers", n, watchers)
		}
		if r.Encoded == nil || r.Encoded.of == nil {
			t.Fatalf("a catch-up response without its stretch of a run: %+v", r)
		}
		if r.Revision%historyRevsPerRound != 0 {
			return // the last stretch, read under the hub's lock each round
		}
		if run, ok := runs[r.Revision]; ok && run != r.Encoded.of {
			t.Fatalf("the stretch up to %d encoded twice", r.Revision)
		}
		runs[r.Revision] = r.Encoded.of
	})
	if len(runs) != windows {
		t.Errorf("%d stretches, want %d", len(runs), windows)
	}
}

// A reader that takes nothing holds back its own watchers only: the others
// catch up past it, and it gets everything once it reads.
func TestCatchUpIsNotHeldByAReaderThatTakesNothing(t *testing.T) {
	s := openTestStore(t)
	putHistory(t, s, 4*historyRevsPerRound)
	last := s.Rev()
	stuck, reading := s.NewWatchStream(), s.NewWatchStream()
	defer stuck.Close()
	defer reading.Close()
	a, err := stuck.Watch(AutoWatchID, []byte("p/"), []byte("p0"), 2, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := reading.Watch(AutoWatchID, []byte("p/"), []byte("p0"), 2, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, reading, []WatchID{b}, last, nil)
	readAll(t, stuck, []WatchID{a}, last, nil)
}
