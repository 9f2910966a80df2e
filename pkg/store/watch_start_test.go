package store

import (
	"slices"
	"testing"
)

// TestWatchNegativeStartIsCompacted: a negative start revision names no
// revision the store has; the watcher is refused with ErrCompacted (as
// etcd), before and after a compaction, whatever else is wrong with the
// request, and the stream goes on serving.
func TestWatchNegativeStartIsCompacted(t *testing.T) {
	s := openTestStore(t)
	mustPut(t, s, "k", "v1")
	ws := s.NewWatchStream()
	defer ws.Close()
	for _, start := range []int64{-1, -100} {
		if _, err := ws.Watch(AutoWatchID, []byte("k"), nil, start, WatchOptions{}); err != ErrCompacted {
			t.Errorf("start %d: %v, want ErrCompacted", start, err)
		}
	}
	if _, err := ws.Watch(AutoWatchID, []byte("k"), []byte("a"), -1, WatchOptions{}); err != ErrCompacted {
		t.Errorf("start -1, empty range: %v, want ErrCompacted", err)
	}
	id, err := ws.Watch(AutoWatchID, []byte("k"), nil, 0, WatchOptions{})
	if err != nil || id != 0 {
		t.Fatalf("a watcher after the refused ones: ID %d, %v", id, err)
	}
	if _, err := ws.Watch(id, []byte("k"), nil, -1, WatchOptions{}); err != ErrCompacted {
		t.Errorf("start -1, ID taken: %v, want ErrCompacted", err)
	}
	mustPut(t, s, "k", "v2")
	if resp := nextResponse(t, ws); resp.WatchID != id || len(resp.Events) != 1 || resp.Events[0].Kv.ModRevision != 3 {
		t.Errorf("the stream's watcher got %+v, want the put at 3", resp)
	}
	done, _ := s.Compact(3)
	<-done
	if _, err := ws.Watch(AutoWatchID, []byte("k"), nil, -1, WatchOptions{}); err != ErrCompacted {
		t.Errorf("start -1 after a compaction: %v, want ErrCompacted", err)
	}
}

// TestWatchFutureStartRevision: a watcher that starts at R, beyond the
// store's revision r, gets exactly the events of R..R+5, and no progress
// notification before the store has reached R (a client resumes a watcher
// after the revision of its last notification, and would resume it below
// R), however often progress is asked for.
func TestWatchFutureStartRevision(t *testing.T) {
	s := openTestStore(t)
	for range 3 {
		mustPut(t, s, "k", "v") // revisions 2..4
	}
	r := s.Rev()
	start := r + 5
	ws := s.NewWatchStream()
	defer ws.Close()
	id, err := ws.Watch(AutoWatchID, []byte("k"), nil, start, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var events []int64
	take := func(resp WatchResponse) {
		t.Helper()
		if resp.WatchID != id && resp.WatchID != ProgressAllWatchID {
			t.Fatalf("response of watcher %d", resp.WatchID)
		}
		if len(resp.Events) == 0 && resp.Revision < start {
			t.Errorf("progress notification at %d, before the start revision %d", resp.Revision, start)
		}
		for _, ev := range resp.Events {
			events = append(events, ev.Kv.ModRevision)
		}
	}
	for rev := r + 1; rev <= start+5; rev++ {
		mustPut(t, s, "k", "v")
		ws.RequestProgress(id)
		ws.RequestProgressAll()
		for len(ws.Chan()) > 0 {
			take(<-ws.Chan())
		}
	}
	for len(events) < 6 {
		take(nextResponse(t, ws))
	}
	want := []int64{start, start + 1, start + 2, start + 3, start + 4, start + 5}
	if !slices.Equal(events, want) {
		t.Errorf("events at %v, want %v", events, want)
	}
}
