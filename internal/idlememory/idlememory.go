// Package idlememory gives the heap a process no longer uses back to the
// operating system once the process is idle.
package idlememory

import (
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Go keeps the heap it has freed mapped, up to its next collection goal:
// twice the live heap by default. A member that took a burst of writes (a
// load of a million keys, say) would go on holding twice the memory of its
// data while nothing happens. Once the member has served no request for
// idleMemoryAfter, and it holds at least idleMemoryMinSpare of heap beyond
// what the last collection found live, that heap is given back to the
// operating system, once per quiet spell: a full collection, while the
// member has little else to do. The watch events it sends do not count as
// requests: watchers catching up on a long history keep it as busy as a
// burst of puts, with no more need of the heap that burst left behind.
const (
	idleMemoryAfter    = 2 * time.Second
	idleMemoryMinSpare = 64 << 20
)

// Run gives the spare heap back, as above, until stop is
// closed; requests counts what the process has served so far.
func Run(stop <-chan struct{}, requests func() int64, log *slog.Logger) {
	tick := time.NewTicker(idleMemoryAfter / 2)
	defer tick.Stop()
	idle := newIdleSpell(requests(), time.Now())
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			if !idle.due(requests(), now) {
				continue
			}
			if b := spareHeap(); b >= idleMemoryMinSpare {
				debug.FreeOSMemory()
				log.Debug("gave the spare heap of an idle member back to the operating system", "bytes", b)
			}
		}
	}
}

// spareHeap is the heap Go holds, not yet given back to the operating
// system, beyond the live heap of the last collection: free spans, and
// objects allocated since, most of them garbage a collection would free.
// The free spans alone are not the measure: a load that ends long after
// the last collection leaves its garbage counted as objects until the
// next, which an idle member may never reach.
func spareHeap() uint64 {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	metrics.Read(samples)
	held := samples[0].Value.Uint64() + samples[1].Value.Uint64()
	return held - min(held, samples[2].Value.Uint64())
}

// idleSpell tells when a member has been quiet for idleMemoryAfter, once
// per quiet spell.
type idleSpell struct {
	requests int64
	since    time.Time
	told     bool
}

func newIdleSpell(requests int64, now time.Time) *idleSpell {
	return &idleSpell{requests: requests, since: now}
}

// due is told the count of requests at now, and reports whether the spell
// has just lasted idleMemoryAfter.
func (i *idleSpell) due(requests int64, now time.Time) bool {
	if requests != i.requests {
		i.requests, i.since, i.told = requests, now, false
		return false
	}
	if i.told || now.Sub(i.since) < idleMemoryAfter {
		return false
	}
	i.told = true
	return true
}
