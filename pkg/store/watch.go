package store

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnkv/cairn/pkg/keyindex"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// WatchID identifies a watcher within its stream.
type WatchID int64

// AutoWatchID asks Watch to pick the lowest free ID.
const AutoWatchID WatchID = -1

// ProgressAllWatchID marks the response to RequestProgressAll.
const ProgressAllWatchID WatchID = -1

// WatchOptions refine what a watcher receives.
type WatchOptions struct {
	PrevKV   bool // fill each event's PrevKv
	NoPut    bool // leave out put events
	NoDelete bool // leave out delete events
}

// WatchResponse carries events of whole revisions, in revision order, or a
// progress notification (no events), or the end of a watcher whose history
// was compacted (CompactRevision set).
type WatchResponse struct {
	WatchID         WatchID
	Events          []*mvccpb.Event
	Revision        int64
	CompactRevision int64
	// Encoded, when set, holds Events in their wire form, shared by every
	// response of the revision that carries the same events.
	Encoded *EncodedEvents
}

// Errors of watch streams.
var (
	ErrWatcherNotFound   = errors.New("mvcc: watcher not found")
	ErrDuplicateWatchID  = errors.New("mvcc: duplicate watch ID provided on the WatchStream")
	ErrWatchStreamClosed = errors.New("mvcc: watch stream closed")
	ErrEmptyWatcherRange = errors.New("mvcc: watcher range is empty")
)

// watchStreamBufferSize is how many responses a stream holds for its reader.
const watchStreamBufferSize = 128

// Sizes of history catch-up: revisions read per round, events per response.
const (
	historyRevsPerRound  = 1000
	maxEventsPerResponse = 1000
)

// WatchStream multiplexes watchers onto one channel of responses.
type WatchStream struct {
	hub      *watchHub
	ch       chan WatchResponse
	watchers map[WatchID]*watcher // guarded by hub.mu
	nextID   WatchID
	closed   bool
	// sent counts the responses put on ch (under hub.mu); those of them
	// no longer on ch have been taken by the reader.
	sent uint64
}

// taken tells whether the reader has taken the stream's n-th response
// off its channel.
func (ws *WatchStream) taken(n uint64) bool { return n <= ws.sent-uint64(len(ws.ch)) }

type watcher struct {
	id     WatchID
	stream *WatchStream
	rng    watchRange
	opts   WatchOptions
	// minRev is the next revision to deliver. For a synced watcher the hub
	// has delivered everything up to its notifiedRev, so minRev only matters
	// when it lies in the future.
	minRev int64
	// startRev is the start revision the watcher was created with (0:
	// from the next revision on).
	startRev int64
	synced   bool
	// lastCatchUp is the stream's count of responses (sent) after the last
	// one of the history this watcher was given: until its reader has
	// taken that one, the watcher is given no more of the history.
	lastCatchUp uint64
	givenAt     time.Time // when that one was given
}

// watchHub delivers the store's changes to watchers. Synced watchers get
// each revision as it is written; a watcher that starts in the past, or
// whose stream is too slow to take a revision, is unsynced and catches up
// from the history in the backend. Writers never wait for a watcher, nor
// for the hub: a writer queues its revision, and the dispatch loop hands
// the queued revisions, in order, to the watchers.
type watchHub struct {
	s *Store

	// Revisions written and not yet handed to the watchers, oldest first.
	// Taken from only under mu (so that they are dispatched in order).
	qmu   sync.Mutex
	queue []notification
	qwake chan struct{}

	mu          sync.Mutex
	notifiedRev int64 // every revision up to this one has gone to the synced watchers
	singles     map[string]map[*watcher]struct{}
	ranges      map[watchRange]map[*watcher]struct{} // the synced range watchers, by range
	unsynced    map[*watcher]struct{}
	windows     []*historyStretch // the catch-up's recent reads (syncLoop only)
	// roomWanted is set while the catch-up waits for readers to take
	// what it gave them: the first reader that takes a response wakes it.
	roomWanted atomic.Bool

	wake chan struct{}
	quit chan struct{}
	wg   sync.WaitGroup

	// streams and watchers open (guarded by mu), and the events handed to
	// streams that their readers have not taken yet (WatchCounts).
	streams, watchers int64
	pending           atomic.Int64
}

func newWatchHub(s *Store) *watchHub {
	h := &watchHub{
		s:           s,
		notifiedRev: s.Rev(),
		singles:     make(map[string]map[*watcher]struct{}),
		ranges:      make(map[watchRange]map[*watcher]struct{}),
		unsynced:    make(map[*watcher]struct{}),
		wake:        make(chan struct{}, 1),
		qwake:       make(chan struct{}, 1),
		quit:        make(chan struct{}),
	}
	h.wg.Add(2)
	go h.syncLoop()
	go h.dispatchLoop()
	return h
}

// NewWatchStream opens a stream of watch responses.
func (s *Store) NewWatchStream() *WatchStream {
	h := s.watch
	h.mu.Lock()
	h.streams++
	h.mu.Unlock()
	return &WatchStream{hub: h, ch: make(chan WatchResponse, watchStreamBufferSize), watchers: make(map[WatchID]*watcher)}
}

// EventsReceived tells the stream its reader took a response of n events
// off Chan (the count of events pending, WatchCounts; and the catch-up of
// watchers from the history, which gives a watcher its next stretch once
// its reader has taken the last).
func (ws *WatchStream) EventsReceived(n int) {
	h := ws.hub
	h.pending.Add(-int64(n))
	if h.roomWanted.Load() && h.roomWanted.CompareAndSwap(true, false) {
		h.poke()
	}
}

// Chan returns the stream's responses. It is closed by Close.
func (ws *WatchStream) Chan() <-chan WatchResponse { return ws.ch }

// Watch starts a watcher on [key, end) (empty end: the key alone; "\x00":
// every key from key on) from startRev (0: the next revision). id is the
// watcher's ID, or AutoWatchID. A negative startRev is refused with
// ErrCompacted, as etcd does: it names no revision the store can serve.
func (ws *WatchStream) Watch(id WatchID, key, end []byte, startRev int64, opts WatchOptions) (WatchID, error) {
	if startRev < 0 {
		return 0, ErrCompacted
	}
	if len(end) > 0 && !keyindex.IsInfiniteEnd(end) && bytes.Compare(key, end) >= 0 {
		return 0, ErrEmptyWatcherRange
	}
	h := ws.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if ws.closed {
		return 0, ErrWatchStreamClosed
	}
	// The queued revisions go to the watchers there are first: whether the
	// new one starts in the past (and catches up from the history, where a
	// compacted start is found) or in the future is told by notifiedRev,
	// which must then be every revision written so far. TestWatchCompacted
	// failed 6 times in 30 without this.
	h.dispatchQueued()
	if id == AutoWatchID {
		for ws.watchers[ws.nextID] != nil {
			ws.nextID++
		}
		id = ws.nextID
		ws.nextID++
	} else if ws.watchers[id] != nil {
		return 0, ErrDuplicateWatchID
	}
	w := &watcher{id: id, stream: ws, rng: watchRange{string(key), string(end)}, opts: opts, minRev: startRev, startRev: startRev}
	if startRev == 0 {
		// The revisions after the store's: a writer publishes its
		// revision before it notifies (under mu), and the watcher must
		// not get one that was already the store's when it was created.
		w.minRev = h.s.Rev() + 1
	}
	ws.watchers[id] = w
	h.watchers++
	if startRev == 0 || startRev > h.notifiedRev {
		h.addSynced(w)
	} else {
		h.unsynced[w] = struct{}{}
		h.poke()
	}
	return id, nil
}

// Cancel stops a watcher.
func (ws *WatchStream) Cancel(id WatchID) error {
	h := ws.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	w := ws.watchers[id]
	if w == nil {
		return ErrWatcherNotFound
	}
	h.remove(w)
	return nil
}

// RequestProgress sends a progress notification for watcher id if it has
// caught up: the revision up to which it has received every event.
func (ws *WatchStream) RequestProgress(id WatchID) {
	h := ws.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dispatchQueued() // so that the revision is the store's, as far as it can be
	if w := ws.watchers[id]; w != nil && h.current(w) {
		h.trySend(ws, WatchResponse{WatchID: id, Revision: h.notifiedRev})
	}
}

// RequestProgressAll sends one progress notification for the whole stream
// if every watcher on it has caught up, and reports whether it did.
func (ws *WatchStream) RequestProgressAll() bool {
	h := ws.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dispatchQueued()
	for _, w := range ws.watchers {
		if !h.current(w) {
			return false
		}
	}
	return h.trySend(ws, WatchResponse{WatchID: ProgressAllWatchID, Revision: h.notifiedRev})
}

// current tells whether a progress notification at notifiedRev is true for
// w: it is synced, and the store has reached its start revision. A client
// resumes a watcher after the revision of its last progress notification
// (clientv3 does), so one sent to a watcher that starts in the future
// would make it resume below its start revision, on a member that is
// behind the others. etcd sends none there either, not even when the start
// revision is the next one.
func (h *watchHub) current(w *watcher) bool {
	return w.synced && w.startRev <= h.notifiedRev
}

// Close cancels every watcher of the stream and closes its channel.
func (ws *WatchStream) Close() {
	h := ws.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if ws.closed {
		return
	}
	for _, w := range ws.watchers {
		h.remove(w)
	}
	ws.closed = true
	h.streams--
	close(ws.ch)
}

func (h *watchHub) addSynced(w *watcher) {
	w.synced = true
	if w.rng.end == "" {
		set := h.singles[w.rng.key]
		if set == nil {
			set = make(map[*watcher]struct{})
			h.singles[w.rng.key] = set
		}
		set[w] = struct{}{}
		return
	}
	r := w.rng
	set := h.ranges[r]
	if set == nil {
		set = make(map[*watcher]struct{})
		h.ranges[r] = set
	}
	set[w] = struct{}{}
}

func (h *watchHub) removeSynced(w *watcher) {
	w.synced = false
	if w.rng.end == "" {
		set := h.singles[w.rng.key]
		delete(set, w)
		if len(set) == 0 {
			delete(h.singles, w.rng.key)
		}
		return
	}
	r := w.rng
	set := h.ranges[r]
	delete(set, w)
	if len(set) == 0 {
		delete(h.ranges, r)
	}
}

func (h *watchHub) remove(w *watcher) {
	if w.synced {
		h.removeSynced(w)
	} else {
		delete(h.unsynced, w)
	}
	delete(w.stream.watchers, w.id)
	h.watchers--
}

func (h *watchHub) trySend(ws *WatchStream, resp WatchResponse) bool {
	if ws.closed {
		return false
	}
	select {
	case ws.ch <- resp:
		ws.sent++
		if n := int64(len(resp.Events)); n > 0 {
			h.s.stats.EventsSent.Add(n)
			h.pending.Add(n)
		}
		return true
	default:
		return false
	}
}

func (h *watchHub) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// watchRange is what a watcher watches: [key, end), every key from key on
// when end is "\x00", or key alone when end is empty. Strings, so that it
// keys the hub's maps as it is.
type watchRange struct{ key, end string }

func (r watchRange) matches(key []byte) bool {
	switch r.end {
	case "":
		return string(key) == r.key
	case "\x00": // keyindex.IsInfiniteEnd
		return string(key) >= r.key
	}
	return string(key) >= r.key && string(key) < r.end
}

// notification is the changes of one revision.
type notification struct {
	rev     int64
	changes []*mvccpb.Event
}

// maxQueuedRevisions bounds the queue of revisions not yet handed to the
// watchers: past it, a writer hands them over itself, so that a dispatch
// loop short of CPU cannot let them pile up in memory.
const maxQueuedRevisions = 10000

// notify queues the changes of revision rev for the watchers. It runs at
// the end of each write transaction, in revision order, and waits for
// nothing but the queue, unless the queue is full.
func (h *watchHub) notify(rev int64, changes []*mvccpb.Event) {
	h.qmu.Lock()
	h.queue = append(h.queue, notification{rev, changes})
	full := len(h.queue) >= maxQueuedRevisions
	h.qmu.Unlock()
	if full {
		h.mu.Lock()
		h.dispatchQueued()
		h.mu.Unlock()
		return
	}
	select {
	case h.qwake <- struct{}{}:
	default:
	}
}

func (h *watchHub) dispatchLoop() {
	defer h.wg.Done()
	for {
		select {
		case <-h.quit:
			return
		case <-h.qwake:
		}
		h.mu.Lock()
		h.dispatchQueued()
		h.mu.Unlock()
	}
}

// dispatchQueued hands the queued revisions to the watchers. The caller
// holds mu.
func (h *watchHub) dispatchQueued() {
	h.qmu.Lock()
	q := h.queue
	h.queue = nil
	h.qmu.Unlock()
	for _, n := range q {
		h.dispatch(n.rev, n.changes)
	}
}

// dispatch hands the changes of revision rev to the synced watchers. It
// never blocks: a watcher whose stream is full becomes unsynced and later
// reads rev from the history. The events are matched once per key or
// range watched, not once per watcher, and the watchers of one key or
// range share their events (and their encoding) unless their options make
// them differ. The caller holds mu.
func (h *watchHub) dispatch(rev int64, changes []*mvccpb.Event) {
	h.notifiedRev = rev
	if len(h.singles) == 0 && len(h.ranges) == 0 {
		return
	}
	if len(h.singles) > 0 {
		if len(changes) == 1 {
			if set := h.singles[string(changes[0].Kv.Key)]; set != nil {
				h.fanOut(set, rev, changes)
			}
		} else {
			var byKey map[string][]*mvccpb.Event
			var keys []string // in the order of their first event
			for _, ev := range changes {
				if h.singles[string(ev.Kv.Key)] == nil {
					continue
				}
				if byKey == nil {
					byKey = make(map[string][]*mvccpb.Event)
				}
				k := string(ev.Kv.Key)
				if _, seen := byKey[k]; !seen {
					keys = append(keys, k)
				}
				byKey[k] = append(byKey[k], ev)
			}
			for _, k := range keys {
				h.fanOut(h.singles[k], rev, byKey[k])
			}
		}
	}
	for r, set := range h.ranges {
		evs := changes
		for i, ev := range changes {
			if !r.matches(ev.Kv.Key) {
				// Not every change is in the range: keep those that are.
				evs = append([]*mvccpb.Event(nil), changes[:i]...)
				for _, ev := range changes[i+1:] {
					if r.matches(ev.Kv.Key) {
						evs = append(evs, ev)
					}
				}
				break
			}
		}
		if len(evs) > 0 {
			h.fanOut(set, rev, evs)
		}
	}
}

// fanOut sends evs, the events of revision rev that the watchers of set
// watch, to each of them that wants them. The watchers that take them as
// they are share one encoding of them; so do those that want them with
// their previous key-values, which are read once.
func (h *watchHub) fanOut(set map[*watcher]struct{}, rev int64, evs []*mvccpb.Event) {
	var plain, prev *EncodedEvents
	var withPrev []*mvccpb.Event
	for w := range set {
		if w.minRev > rev {
			continue
		}
		out, enc := evs, &plain
		if w.opts.PrevKV {
			if withPrev == nil {
				withPrev = h.withPrevKV(evs)
			}
			out, enc = withPrev, &prev
		}
		if w.opts.NoPut || w.opts.NoDelete {
			out = w.opts.filter(out)
			if len(out) == 0 {
				continue
			}
		}
		resp := WatchResponse{WatchID: w.id, Events: out, Revision: rev}
		if len(out) == len(evs) {
			if *enc == nil {
				*enc = NewEncodedEvents(out)
			}
			resp.Encoded = *enc
		}
		if !h.trySend(w.stream, resp) {
			h.removeSynced(w)
			w.minRev = rev
			h.unsynced[w] = struct{}{}
			h.poke()
		}
	}
}

// filter returns the events of evs that o wants (evs itself if all).
func (o WatchOptions) filter(evs []*mvccpb.Event) []*mvccpb.Event {
	for i, ev := range evs {
		if !o.wants(ev) {
			out := append([]*mvccpb.Event(nil), evs[:i]...)
			for _, ev := range evs[i+1:] {
				if o.wants(ev) {
					out = append(out, ev)
				}
			}
			return out
		}
	}
	return evs
}

func (o WatchOptions) wants(ev *mvccpb.Event) bool {
	switch ev.Type {
	case mvccpb.PUT:
		return !o.NoPut
	case mvccpb.DELETE:
		return !o.NoDelete
	}
	return true
}

// withPrevKV returns copies of evs with PrevKv filled: the key's value at
// the revision before each event (nil if compacted).
func (h *watchHub) withPrevKV(evs []*mvccpb.Event) []*mvccpb.Event {
	out := make([]*mvccpb.Event, len(evs))
	r := h.s.Read()
	defer r.End()
	for i, ev := range evs {
		out[i] = &mvccpb.Event{Type: ev.Type, Kv: ev.Kv}
		res, err := r.Range(ev.Kv.Key, nil, RangeOptions{Rev: ev.Kv.ModRevision - 1})
		if err == nil && len(res.KVs) == 1 {
			out[i].PrevKv = res.KVs[0]
		}
	}
	return out
}

// compacted wakes the catch-up loop, which ends the watchers whose history
// is now gone.
func (h *watchHub) compacted(int64) { h.poke() }

func (h *watchHub) close() {
	close(h.quit)
	h.wg.Wait()
}
