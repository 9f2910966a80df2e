package idlememory

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

var garbage []byte

// TestSpareHeapCountsGarbageNotYetCollected: 100 MB allocated and dropped
// after the last collection is heap an idle member can give back, though
// no collection has yet made it free (the end of a load long after the
// last collection: the member held it at rest; BENCHMARKS.md, "Memory and
// garbage collection").
func TestSpareHeapCountsGarbageNotYetCollected(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	before := spareHeap()
	const chunk, total = 4 << 10, 100 << 20
	for range total / chunk {
		garbage = make([]byte, chunk)
	}
	garbage = nil
	if got := spareHeap(); got < before+total*9/10 {
		t.Fatalf("spare heap %d MB after dropping %d MB (%d MB before)", got>>20, total>>20, before>>20)
	}
	runtime.GC()
	debug.FreeOSMemory()
	if got := spareHeap(); got >= idleMemoryMinSpare {
		t.Fatalf("spare heap %d MB after the heap was given back, want under %d MB", got>>20, idleMemoryMinSpare>>20)
	}
}

func TestIdleSpellIsDueOncePerQuietSpell(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	i := newIdleSpell(5, t0)
	steps := []struct {
		requests int64
		at       time.Duration
		want     bool
	}{
		{5, time.Second, false},                     // quiet, not for long enough
		{5, idleMemoryAfter, true},                  // quiet for idleMemoryAfter
		{5, 3 * idleMemoryAfter, false},             // told once per spell
		{6, 3*idleMemoryAfter + time.Second, false}, // a request ends the spell
		{6, 4*idleMemoryAfter + time.Second - 1, false},
		{6, 4*idleMemoryAfter + time.Second, true}, // a new spell
	}
	for n, st := range steps {
		if got := i.due(st.requests, at(st.at)); got != st.want {
			t.Fatalf("step %d (%d requests at +%s): due %v, want %v", n, st.requests, st.at, got, st.want)
		}
	}
}
