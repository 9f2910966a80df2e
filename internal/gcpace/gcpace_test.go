package gcpace

import (
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentFor(t *testing.T) {
	for _, c := range []struct {
		live, room uint64
		want       int
	}{
		{live: 16 << 20, room: 64 << 20, want: 400},
		{live: 1 << 30, room: 64 << 20, want: 100}, // a large heap keeps Go's pace
		{live: 64 << 20, room: 64 << 20, want: 100},
		{live: 0, room: 64 << 20, want: 1600},       // before the first collection: from 4 MB
		{live: 1 << 20, room: 64 << 20, want: 1600}, // never from less than 4 MB
	} {
		if got := percentFor(c.live, c.room); got != c.want {
			t.Errorf("percentFor(%d, %d) = %d, want %d", c.live, c.room, got, c.want)
		}
	}
}

// TestKeepRoomFollowsTheLiveHeap: after KeepRoom, a collection over a small
// live heap raises GOGC, and one over a live heap larger than the room
// brings it back to 100.
func TestKeepRoomFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	const room = 64 << 20
	KeepRoom(room)
	runtime.GC()
	waitForGOGC(t, func(p uint64) bool { return p > 400 && p <= 1600 })

	live := make([]byte, 4*room)
	for i := range live {
		live[i] = 1 // in the heap, not only reserved
	}
	waitForGOGC(t, func(p uint64) bool { return p == basePercent })
	runtime.KeepAlive(live)
}

// waitForGOGC collects until the GOGC percentage satisfies ok: the pacer
// adjusts it from a finalizer, after a collection.
func waitForGOGC(t *testing.T, ok func(uint64) bool) {
	t.Helper()
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		metrics.Read(s)
		if ok(s[0].Value.Uint64()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC stayed %d", s[0].Value.Uint64())
		}
		runtime.GC()
		time.Sleep(time.Millisecond) // the finalizer's goroutine runs after the collection
	}
}

func TestLoadMeter(t *testing.T) {
	var n int64
	start := time.Unix(1000, 0)
	m := &loadMeter{requests: func() int64 { return n }, at: start}
	n = 50
	if _, known := m.busy(start.Add(minWindow / 2)); known {
		t.Fatal("a window shorter than minWindow gave an answer")
	}
	// The window goes on: 50 requests in 0.6 s is under busyRate.
	if busy, known := m.busy(start.Add(600 * time.Millisecond)); !known || busy {
		t.Fatalf("50 requests in 0.6 s: busy %v, known %v; want quiet", busy, known)
	}
	n += 30 // 30 in the next 0.2 s: 150 a second
	if busy, known := m.busy(start.Add(800 * time.Millisecond)); !known || !busy {
		t.Fatalf("30 requests in 0.2 s: busy %v, known %v; want busy", busy, known)
	}
	if busy, _ := m.busy(start.Add(1800 * time.Millisecond)); busy {
		t.Fatal("no request in a second: busy")
	}
}

// TestFollowLoadSetsTheRoomForTheLoad: while requests come fast the room
// is KeepRoom's; once they stop it is the quiet room; when FollowLoad ends,
// KeepRoom's again.
func TestFollowLoadSetsTheRoomForTheLoad(t *testing.T) {
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	KeepRoom(64 << 20) // as in TestKeepRoomFollowsTheLiveHeap: only the first call counts
	busyPercent := func(p uint64) bool { return p > 400 && p <= 1600 }
	quietPercent := func(p uint64) bool { return p <= 200 } // 8 MB over at least 4 MB live

	var requests atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		FollowLoad(8<<20, requests.Load, stop)
	}()
	ctx, endLoad := context.WithCancel(context.Background())
	go func() {
		for ctx.Err() == nil {
			requests.Add(10) // 10,000 a second
			time.Sleep(time.Millisecond)
		}
	}()
	waitForGOGC(t, busyPercent)
	endLoad()
	waitForGOGC(t, quietPercent)
	close(stop)
	<-done
	waitForGOGC(t, busyPercent)
}
