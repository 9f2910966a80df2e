package gcpace

import (
	"os"
	"runtime"
	"runtime/metrics"
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
