package store

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/pkg/kvcodec"
)

// syncInterval is how often unsynced watchers are caught up when nothing
// wakes the loop earlier.
const syncInterval = 100 * time.Millisecond

func (h *watchHub) syncLoop() {
	defer h.wg.Done()
	t := time.NewTicker(syncInterval)
	defer t.Stop()
	for {
		select {
		case <-h.quit:
			return
		case <-t.C:
		case <-h.wake:
		}
		for h.syncRound() {
			select {
			case <-h.quit:
				return
			default:
			}
		}
	}
}

// syncRound moves unsynced watchers forward through the history and reports
// whether another round would make progress at once. The bulk of the
// history is read without holding the hub's lock; only the last stretch,
// up to the revision writers have notified, is read under it, so that a
// watcher joins the synced set with nothing missed and nothing repeated.
//
// A round moves only the watchers whose readers can take more (ready), and
// it moves them together: through the stretch of history of the one
// furthest behind, so that the stretches in memory are few. A reader that
// has not taken its watcher's last stretch for catchUpPatience no longer
// holds the others back.
func (h *watchHub) syncRound() bool {
	now := time.Now()
	h.mu.Lock()
	h.roomWanted.Store(true)
	ws := make([]*watcher, 0, len(h.unsynced))
	minRev, minReady := int64(0), int64(0)
	waiting := false
	for w := range h.unsynced {
		ready := w.ready()
		if !ready {
			waiting = true
			if now.Sub(w.givenAt) >= catchUpPatience {
				continue
			}
		}
		if minRev == 0 || w.minRev < minRev {
			minRev = w.minRev
		}
		if ready {
			ws = append(ws, w)
			if minReady == 0 || w.minRev < minReady {
				minReady = w.minRev
			}
		}
	}
	target := h.notifiedRev
	h.mu.Unlock()
	if len(ws) == 0 {
		if !waiting {
			h.windows = nil
		}
		return false
	}

	if h.endCompacted(ws) {
		return true
	}
	// Catch up in bounded steps while far behind.
	if target-minRev >= historyRevsPerRound {
		from := minRev - (minRev-1)%historyRevsPerRound
		upTo := from + historyRevsPerRound - 1
		win, err := h.historyWindow(from)
		if err != nil {
			h.s.log.Error("watch history read failed", "from", from, "to", upTo, "err", err)
			return false
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		progressed := false
		for _, g := range h.catchUpGroups(ws) {
			due := slices.DeleteFunc(g, func(w *watcher) bool { return w.minRev > upTo })
			if len(due) > 0 {
				progressed = len(h.deliver(due, win.pickFor(h, due[0]), upTo)) > 0 || progressed
			}
		}
		return progressed
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	target = h.notifiedRev
	evs, err := h.s.history(minReady, target)
	if err != nil {
		h.s.log.Error("watch history read failed", "from", minReady, "to", target, "err", err)
		return false
	}
	for _, g := range h.catchUpGroups(ws) {
		from := g[0].minRev
		for _, w := range g[1:] {
			from = min(from, w.minRev)
		}
		for _, w := range h.deliver(g, h.pick(g[0], evs, from), target) {
			delete(h.unsynced, w)
			h.addSynced(w)
		}
	}
	return false
}

// catchUpPatience is how long a watcher whose reader has not taken the
// last stretch of history it was given holds back the others.
const catchUpPatience = 100 * time.Millisecond

// historyWindows is how many stretches of history the catch-up keeps:
// watchers created a moment apart, or whose streams take responses at
// different paces, catch up some steps apart, each step reading what the
// one ahead of it has read.
const historyWindows = 8

// historyWindow is the history of the historyRevsPerRound revisions from
// from, a multiple of historyRevsPerRound plus one, read once for the
// rounds that need it: the last historyWindows of them are kept while
// watchers catch up (syncLoop's goroutine only).
func (h *watchHub) historyWindow(from int64) (*historyStretch, error) {
	for _, w := range h.windows {
		if w.from == from {
			return w, nil
		}
	}
	evs, err := h.s.history(from, from+historyRevsPerRound-1)
	if err != nil {
		return nil, err
	}
	if len(h.windows) == historyWindows { // the oldest goes
		copy(h.windows, h.windows[1:])
		h.windows[len(h.windows)-1] = nil
		h.windows = h.windows[:len(h.windows)-1]
	}
	win := &historyStretch{from: from, evs: evs, picks: make(map[catchUpKey]pickedEvents)}
	h.windows = append(h.windows, win)
	return win, nil
}

// historyStretch is a stretch of history read for the catch-up, and what
// each group of watchers gets of it.
type historyStretch struct {
	from  int64
	evs   []*mvccpb.Event
	picks map[catchUpKey]pickedEvents
}

// pickFor is what the watchers that get the same events as w get of the
// stretch, picked and encoded once however many rounds hand it out: the
// watchers of a group reach a stretch some rounds apart, each once its
// reader has taken the stretch before.
func (s *historyStretch) pickFor(h *watchHub, w *watcher) pickedEvents {
	k := catchUpKey{w.rng, w.opts}
	p, ok := s.picks[k]
	if !ok {
		p = h.pick(w, s.evs, s.from)
		s.picks[k] = p
	}
	return p
}

// pickedEvents is the events of a stretch of history that a group of
// watchers gets, and their encoding as one run.
type pickedEvents struct {
	evs []*mvccpb.Event
	run *EncodedEvents
}

// pick is the events of evs from revision from on that w watches, with
// their previous values if w wants them.
func (h *watchHub) pick(w *watcher, evs []*mvccpb.Event, from int64) pickedEvents {
	var picked []*mvccpb.Event
	for _, ev := range evs {
		if ev.Kv.ModRevision >= from && w.rng.matches(ev.Kv.Key) && w.opts.wants(ev) {
			picked = append(picked, ev)
		}
	}
	if w.opts.PrevKV {
		picked = h.withPrevKV(picked)
	}
	return pickedEvents{picked, newEncodedRun(picked)}
}

// ready tells whether w's reader can take more of the history: its stream
// has room, and the reader has taken the last stretch w was given. A
// reader is given one stretch of each watcher at a time, so that a
// catch-up holds a few stretches in memory, not the history queued for
// every watcher (the hub's lock held).
func (w *watcher) ready() bool {
	return len(w.stream.ch) < cap(w.stream.ch) && w.stream.taken(w.lastCatchUp)
}

// catchUpKey identifies the unsynced watchers that get the same events:
// the same keys and options, each from its own next revision.
type catchUpKey struct {
	rng  watchRange
	opts WatchOptions
}

// catchUpGroups sorts the watchers of ws still unsynced and ready into
// groups that get the same events, so that each group's are picked and
// encoded once.
func (h *watchHub) catchUpGroups(ws []*watcher) [][]*watcher {
	index := make(map[catchUpKey]int)
	var groups [][]*watcher
	for _, w := range ws {
		if !w.ready() {
			continue
		}
		if _, still := h.unsynced[w]; !still {
			continue
		}
		k := catchUpKey{w.rng, w.opts}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], w)
	}
	return groups
}

// endCompacted ends the watchers whose next revision has been compacted
// away, telling each the compaction revision. It reports whether any were.
func (h *watchHub) endCompacted(ws []*watcher) bool {
	compactRev := h.s.CompactRev()
	h.mu.Lock()
	defer h.mu.Unlock()
	ended := false
	for _, w := range ws {
		if _, still := h.unsynced[w]; !still || w.minRev >= compactRev {
			continue
		}
		if h.trySend(w.stream, WatchResponse{WatchID: w.id, CompactRevision: compactRev, Revision: h.notifiedRev}) {
			h.remove(w)
			ended = true
		}
	}
	return ended
}

// deliver sends each watcher of g (a catch-up group) the events of p from
// its minRev up to upTo, a few whole revisions per response, and advances
// each one's minRev past what it was sent. The responses are stretches of
// p's one run: watchers created one after another at one start revision
// catch up some steps apart. It returns the watchers that got everything
// up to upTo.
func (h *watchHub) deliver(g []*watcher, p pickedEvents, upTo int64) []*watcher {
	picked, now := p.evs, time.Now()
	var done []*watcher
	for _, w := range g {
		all := true
		for i := sort.Search(len(picked), func(i int) bool { return picked[i].Kv.ModRevision >= w.minRev }); i < len(picked); {
			j := min(i+maxEventsPerResponse, len(picked))
			for j < len(picked) && picked[j].Kv.ModRevision == picked[j-1].Kv.ModRevision {
				j++ // a revision is never split between responses
			}
			if !h.trySend(w.stream, WatchResponse{WatchID: w.id, Events: picked[i:j], Revision: upTo, Encoded: p.run.stretch(i, j)}) {
				all = false
				break
			}
			w.lastCatchUp, w.givenAt = w.stream.sent, now
			w.minRev = picked[j-1].Kv.ModRevision + 1
			i = j
		}
		if all {
			w.minRev = max(w.minRev, upTo+1)
			done = append(done, w)
		}
	}
	return done
}

// history returns the events of revisions [from, to] in revision order, as
// recorded in the backend.
func (s *Store) history(from, to int64) ([]*mvccpb.Event, error) {
	if from > to {
		return nil, nil
	}
	r := s.Read()
	defer r.End()
	var evs []*mvccpb.Event
	var decodeErr error
	start := RevisionKey(Revision{Main: from}, false)
	end := RevisionKey(Revision{Main: to + 1}, false)
	err := r.rt.Range(BucketKey, start, end, func(k, v []byte) bool {
		rev, tomb, err := ParseRevisionKey(k)
		if err != nil {
			decodeErr = err
			return false
		}
		kv := new(mvccpb.KeyValue)
		if err := kvcodec.Unmarshal(v, kv); err != nil {
			decodeErr = fmt.Errorf("revision %s: %w", rev, err)
			return false
		}
		ev := &mvccpb.Event{Type: mvccpb.PUT, Kv: kv}
		if tomb {
			ev.Type = mvccpb.DELETE
			kv.ModRevision = rev.Main
		}
		evs = append(evs, ev)
		return true
	})
	if err == nil {
		err = decodeErr
	}
	return evs, err
}
