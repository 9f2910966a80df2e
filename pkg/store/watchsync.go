package store

import (
	"fmt"
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
func (h *watchHub) syncRound() bool {
	h.mu.Lock()
	ws := make([]*watcher, 0, len(h.unsynced))
	minRev := int64(0)
	for w := range h.unsynced {
		ws = append(ws, w)
		if minRev == 0 || w.minRev < minRev {
			minRev = w.minRev
		}
	}
	target := h.notifiedRev
	h.mu.Unlock()
	if len(ws) == 0 {
		return false
	}

	if h.endCompacted(ws) {
		return true
	}
	// Catch up in bounded steps while far behind.
	if target-minRev >= historyRevsPerRound {
		upTo := minRev + historyRevsPerRound - 1
		evs, err := h.s.history(minRev, upTo)
		if err != nil {
			h.s.log.Error("watch history read failed", "from", minRev, "to", upTo, "err", err)
			return false
		}
		h.mu.Lock()
		progressed := false
		for _, g := range h.catchUpGroups(ws) {
			if g[0].minRev <= upTo && len(h.deliver(g, evs, upTo)) > 0 {
				progressed = true
			}
		}
		h.mu.Unlock()
		return progressed
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	target = h.notifiedRev
	evs, err := h.s.history(minRev, target)
	if err != nil {
		h.s.log.Error("watch history read failed", "from", minRev, "to", target, "err", err)
		return false
	}
	for _, g := range h.catchUpGroups(ws) {
		for _, w := range h.deliver(g, evs, target) {
			delete(h.unsynced, w)
			h.addSynced(w)
		}
	}
	return false
}

// catchUpKey identifies the unsynced watchers that get the same responses:
// the same keys, options and next revision.
type catchUpKey struct {
	rng    watchRange
	opts   WatchOptions
	minRev int64
}

// catchUpGroups sorts the watchers of ws still unsynced into groups that
// get the same responses, so that each group's are made (and encoded)
// once. Watchers whose stream has no room for a response are left for a
// later round.
func (h *watchHub) catchUpGroups(ws []*watcher) [][]*watcher {
	index := make(map[catchUpKey]int)
	var groups [][]*watcher
	for _, w := range ws {
		if len(w.stream.ch) == cap(w.stream.ch) {
			continue
		}
		if _, still := h.unsynced[w]; !still {
			continue
		}
		k := catchUpKey{w.rng, w.opts, w.minRev}
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

// deliver sends each watcher of g (a catch-up group) the events of evs in
// [minRev, upTo] that they watch, a few whole revisions per response, and
// advances each one's minRev past what it was sent. The responses are made
// once for the group and their events encoded once. It returns the
// watchers that got everything up to upTo.
func (h *watchHub) deliver(g []*watcher, evs []*mvccpb.Event, upTo int64) []*watcher {
	w0 := g[0]
	var batches [][]*mvccpb.Event
	var batch []*mvccpb.Event
	for _, ev := range evs {
		rev := ev.Kv.ModRevision
		if rev < w0.minRev || !w0.rng.matches(ev.Kv.Key) || !w0.opts.wants(ev) {
			continue
		}
		if len(batch) >= maxEventsPerResponse && batch[len(batch)-1].Kv.ModRevision != rev {
			batches = append(batches, batch)
			batch = nil
		}
		batch = append(batch, ev)
	}
	if len(batch) > 0 {
		batches = append(batches, batch)
	}
	if w0.opts.PrevKV {
		for i, b := range batches {
			batches[i] = h.withPrevKV(b)
		}
	}
	encoded := make([]*EncodedEvents, len(batches))
	for i, b := range batches {
		encoded[i] = NewEncodedEvents(b)
	}
	var done []*watcher
	for _, w := range g {
		all := true
		for i, b := range batches {
			if !h.trySend(w.stream, WatchResponse{WatchID: w.id, Events: b, Revision: upTo, Encoded: encoded[i]}) {
				all = false
				break
			}
			w.minRev = b[len(b)-1].Kv.ModRevision + 1
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
