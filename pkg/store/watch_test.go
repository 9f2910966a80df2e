package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

func nextResponse(t *testing.T, ws *WatchStream) WatchResponse {
	t.Helper()
	select {
	case resp := <-ws.Chan():
		return resp
	case <-time.After(10 * time.Second):
		t.Fatal("no watch response within 10s")
		return WatchResponse{}
	}
}

func TestWatchFiltersAndPrevKV(t *testing.T) {
	s := openTestStore(t)
	ws := s.NewWatchStream()
	defer ws.Close()
	noPut, _ := ws.Watch(AutoWatchID, []byte("k"), nil, 0, WatchOptions{NoPut: true})
	withPrev, _ := ws.Watch(AutoWatchID, []byte("k"), []byte("l"), 0, WatchOptions{PrevKV: true})
	if noPut != 0 || withPrev != 1 {
		t.Fatalf("watch IDs %d and %d, want 0 and 1", noPut, withPrev)
	}
	if _, err := ws.Watch(1, []byte("x"), nil, 0, WatchOptions{}); err != ErrDuplicateWatchID {
		t.Errorf("duplicate ID: %v", err)
	}
	mustPut(t, s, "k", "v1")
	mustPut(t, s, "k", "v2")
	s.DeleteRange(&pb.DeleteRangeRequest{Key: []byte("k")})

	var got []string
	for len(got) < 4 {
		resp := nextResponse(t, ws)
		for _, ev := range resp.Events {
			prev := "-"
			if ev.PrevKv != nil {
				prev = string(ev.PrevKv.Value)
			}
			got = append(got, fmt.Sprintf("%d:%s@%d prev=%s", resp.WatchID, ev.Type, ev.Kv.ModRevision, prev))
		}
	}
	want := "[1:PUT@2 prev=- 1:PUT@3 prev=v1 0:DELETE@4 prev=- 1:DELETE@4 prev=v2]"
	if fmt.Sprint(got) != want {
		t.Errorf("events %v, want %s", got, want)
	}
}

func TestWatchHistoryAndProgress(t *testing.T) {
	s := openTestStore(t)
	for i := 0; i < 10; i++ {
		mustPut(t, s, "k", fmt.Sprint(i)) // revisions 2..11
	}
	ws := s.NewWatchStream()
	defer ws.Close()
	id, _ := ws.Watch(AutoWatchID, []byte("k"), nil, 5, WatchOptions{})
	var revs []int64
	for len(revs) < 7 {
		for _, ev := range nextResponse(t, ws).Events {
			revs = append(revs, ev.Kv.ModRevision)
		}
	}
	if fmt.Sprint(revs) != "[5 6 7 8 9 10 11]" {
		t.Fatalf("history from 5: %v", revs)
	}
	// Once caught up, a progress request answers with the current revision.
	for {
		ws.RequestProgress(id)
		resp := nextResponse(t, ws)
		if len(resp.Events) == 0 {
			if resp.Revision != 11 {
				t.Fatalf("progress at %d, want 11", resp.Revision)
			}
			break
		}
	}
	if !ws.RequestProgressAll() {
		t.Fatal("RequestProgressAll with every watcher synced sent nothing")
	}
	if resp := nextResponse(t, ws); resp.WatchID != ProgressAllWatchID || resp.Revision != 11 {
		t.Errorf("progress-all response %+v", resp)
	}
}

func TestWatchCompacted(t *testing.T) {
	s := openTestStore(t)
	for i := 0; i < 10; i++ {
		mustPut(t, s, "k", fmt.Sprint(i))
	}
	done, _ := s.Compact(8)
	<-done
	ws := s.NewWatchStream()
	defer ws.Close()
	ws.Watch(AutoWatchID, []byte("k"), nil, 3, WatchOptions{})
	resp := nextResponse(t, ws)
	if resp.CompactRevision != 8 || len(resp.Events) != 0 {
		t.Fatalf("watch from a compacted revision: %+v, want CompactRevision 8", resp)
	}
	if err := ws.Cancel(resp.WatchID); err != ErrWatcherNotFound {
		t.Errorf("the compacted watcher is still registered: %v", err)
	}
}

// A stream nobody reads must not hold writers up; once it is read it
// catches up with every event, in order, each once.
func TestSlowWatcherDoesNotBlockWriters(t *testing.T) {
	s := openTestStore(t)
	ws := s.NewWatchStream()
	defer ws.Close()
	ws.Watch(AutoWatchID, []byte("k"), []byte("l"), 0, WatchOptions{})
	const writes = 5 * watchStreamBufferSize
	for i := 0; i < writes; i++ {
		mustPut(t, s, fmt.Sprintf("k%d", i), "v") // nobody reads the stream meanwhile
	}
	next := int64(2)
	for next <= int64(writes+1) {
		for _, ev := range nextResponse(t, ws).Events {
			if ev.Kv.ModRevision != next || ev.Type != mvccpb.PUT {
				t.Fatalf("event at %d, want %d", ev.Kv.ModRevision, next)
			}
			next++
		}
	}
}

// etcd's TestDeleteEventDrop_Issue18089: a watch may start at the
// compaction revision itself, and when that revision is a delete it must
// see the DELETE, first, then what follows; a restart keeps it so, and the
// next compaction removes the tombstone. (etcd 3.7.3 answers
// `watch k --rev=4` here with DELETE k, PUT k v3.)
func TestWatchFromCompactionAtADelete(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openStoreAt(t, path)
	mustPut(t, s, "k", "v1")                                                           // 2
	mustPut(t, s, "k", "v2")                                                           // 3
	if _, err := s.DeleteRange(&pb.DeleteRangeRequest{Key: []byte("k")}); err != nil { // 4
		t.Fatal(err)
	}
	mustPut(t, s, "k", "v3") // 5
	done, err := s.Compact(4)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	// watchFrom returns the events of a watch on k from rev, up to and
	// including the one at until.
	watchFrom := func(s *Store, rev, until int64) string {
		t.Helper()
		ws := s.NewWatchStream()
		defer ws.Close()
		if _, err := ws.Watch(AutoWatchID, []byte("k"), nil, rev, WatchOptions{PrevKV: true}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for last := int64(0); last < until; {
			resp := nextResponse(t, ws)
			if resp.CompactRevision != 0 {
				t.Fatalf("watch from %d ended as compacted at %d", rev, resp.CompactRevision)
			}
			for _, ev := range resp.Events {
				got = append(got, fmt.Sprintf("%s@%d:%s prev=%v", ev.Type, ev.Kv.ModRevision, ev.Kv.Value, ev.PrevKv != nil))
				last = ev.Kv.ModRevision
			}
		}
		return fmt.Sprint(got)
	}
	// The value before the delete is compacted away, so it has no prev_kv.
	const want = "[DELETE@4: prev=false PUT@5:v3 prev=false]"
	if got := watchFrom(s, 4, 5); got != want {
		t.Errorf("watch from the compaction revision 4: %s, want %s", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStoreAt(t, path)
	if got := watchFrom(s, 4, 5); got != want {
		t.Errorf("after a reopen, watch from 4: %s, want %s", got, want)
	}
	mustPut(t, s, "k", "v4") // 6
	if done, err = s.Compact(5); err != nil {
		t.Fatal(err)
	}
	<-done
	var left []string
	r := s.Read()
	r.rt.Range(BucketKey, nil, nil, func(k, _ []byte) bool {
		rev, tomb, _ := ParseRevisionKey(k)
		left = append(left, fmt.Sprintf("%d%s", rev.Main, map[bool]string{true: "t"}[tomb]))
		return true
	})
	r.End()
	if fmt.Sprint(left) != "[5 6]" {
		t.Errorf("revisions in the backend after compacting at 5: %v, want [5 6] (the tombstone at 4 gone)", left)
	}
}
