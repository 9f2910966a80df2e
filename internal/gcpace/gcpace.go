// Package gcpace paces the garbage collector of a serving process: it
// keeps a minimum of room for new allocation between collections, however
// small the live heap, while the process is busy with requests.
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
//
// The room is for the latency of requests, and it costs its size in
// resident memory. Work no client waits on request by request, such as
// watchers catching up on a long history, allocates as fast but gains
// nothing from it: while the process serves few requests (FollowLoad), the
// room is smaller.
package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// basePercent is Go's default GOGC, the pace a large heap keeps.
const basePercent = 100

// FollowLoad counts a process busy while it serves at least busyRate
// requests a second, over windows of at least minWindow; it looks every
// tick, and after every collection.
const (
	busyRate  = 100
	minWindow = 100 * time.Millisecond
	tick      = 500 * time.Millisecond
)

var (
	once sync.Once
	pace *pacer
)

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
		pace = &pacer{busyRoom: room, quietRoom: room, room: room, percent: basePercent,
			live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
		pace.adjust()
		pace.arm()
	})
}

// FollowLoad makes the room of KeepRoom depend on the load, until stop is
// closed: while the process serves fewer than busyRate requests a second
// (requests counts them so far), the room is quietRoom. The load is looked
// at after every collection and every half second, so that a burst of
// requests gets its room from the first collection in it, and the end of
// one gives the room back within a second. It does nothing without
// KeepRoom.
func FollowLoad(quietRoom uint64, requests func() int64, stop <-chan struct{}) {
	p := pace
	if p == nil {
		return
	}
	p.mu.Lock()
	p.quietRoom = quietRoom
	p.load = &loadMeter{requests: requests, seen: requests(), at: time.Now()}
	p.mu.Unlock()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			p.mu.Lock()
			p.load = nil
			p.mu.Unlock()
			p.adjust()
			return
		case <-t.C:
			p.adjust()
		}
	}
}

type pacer struct {
	mu                  sync.Mutex
	busyRoom, quietRoom uint64
	room                uint64 // busyRoom or quietRoom
	load                *loadMeter
	percent             int
	live                []metrics.Sample
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

// adjust sets the room for the load, if followed, and the percentage for
// the live heap of the last collection; it leaves the percentage alone
// when the change would be under a tenth.
func (p *pacer) adjust() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.load != nil {
		if busy, known := p.load.busy(time.Now()); known {
			p.room = p.quietRoom
			if busy {
				p.room = p.busyRoom
			}
		}
	} else {
		p.room = p.busyRoom
	}
	metrics.Read(p.live)
	want := percentFor(p.live[0].Value.Uint64(), p.room)
	if diff := want - p.percent; diff*10 > p.percent || -diff*10 > p.percent {
		p.percent = want
		debug.SetGCPercent(want)
	}
}

// loadMeter tells whether requests came at busyRate or more since it was
// last asked.
type loadMeter struct {
	requests func() int64
	seen     int64
	at       time.Time
}

// busy reports whether the requests since the last answer came at busyRate
// or more; known is false, and the window goes on, while it is shorter
// than minWindow.
func (m *loadMeter) busy(now time.Time) (busy, known bool) {
	d := now.Sub(m.at)
	if d < minWindow {
		return false, false
	}
	n := m.requests()
	busy = float64(n-m.seen) >= busyRate*d.Seconds()
	m.seen, m.at = n, now
	return busy, true
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
