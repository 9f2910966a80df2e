// Package gcpace paces the garbage collector of a serving process: it
// keeps a minimum of room for new allocation between collections, however
// small the live heap.
//
// Go collects when the heap has grown by GOGC percent (100) of what the
// last collection left live. A member holding a small keyspace has 10–20
// MB live and allocates some 200 MB a second under load, so it collected
// 20 times a second. Each collection's marking takes a quarter of the
// processors and makes the goroutines that allocate help it, and a
// request that meets one waits: the p99 latency of puts was 15–35% higher
// than with GOGC=400. With a floor on the room between collections, the
// live heap's own size decides only once it is large: a member holding a
// million keys keeps GOGC's pace, and its memory.
package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// basePercent is Go's default GOGC, the pace a large heap keeps.
const basePercent = 100

var once sync.Once

// KeepRoom makes every collection leave at least room bytes of allocation
// before the next one, for the rest of the process's life, unless the
// environment sets GOGC (the operator's choice wins). It adjusts the
// collector's percentage after each collection, from the live heap it
// found. Only the first call does anything.
func KeepRoom(room uint64) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	once.Do(func() {
		p := &pacer{room: room, percent: basePercent,
			live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
		p.adjust()
		p.arm()
	})
}

type pacer struct {
	room    uint64
	percent int
	live    []metrics.Sample
}

// minHeap is the smallest live heap Go paces from (its first collection
// comes at 4 MB times GOGC/100).
const minHeap = 4 << 20

// percentFor is the GOGC percentage that leaves room bytes after a live
// heap of live bytes, and never less than basePercent. Before the first
// collection nothing has been found live: the pace is that of minHeap.
func percentFor(live, room uint64) int {
	return max(basePercent, int(room*100/max(live, minHeap)))
}

// adjust sets the percentage for the live heap of the last collection;
// it leaves it alone when the change would be under a tenth.
func (p *pacer) adjust() {
	metrics.Read(p.live)
	want := percentFor(p.live[0].Value.Uint64(), p.room)
	if diff := want - p.percent; diff*10 > p.percent || -diff*10 > p.percent {
		p.percent = want
		debug.SetGCPercent(want)
	}
}

// sentinel is an object made to be collected. It holds a pointer, so that
// it is never one of the tiny objects Go packs together, whose finalizers
// may not run.
type sentinel struct{ p *pacer }

// arm makes the next collection call adjust: a finalizer runs after the
// collection that finds its object unreachable, and arms the next one.
func (p *pacer) arm() {
	runtime.SetFinalizer(&sentinel{p}, func(s *sentinel) {
		s.p.adjust()
		s.p.arm()
	})
}
