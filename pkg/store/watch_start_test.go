package store

import (
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
