package store

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"

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
}

type watcher struct {
	id       WatchID
	stream   *WatchStream
	key, end []byte
	opts     WatchOptions
	// minRev is the next revision to deliver. For a synced watcher the hub
	// has delivered everything up to its notifiedRev, so minRev only matters
	// when it lies in the future.
	minRev int64
	synced bool
}

func (w *watcher) matches(key []byte) bool {
	switch {
	case len(w.end) == 0:
		return bytes.Equal(key, w.key)
	case isInfiniteEnd(w.end):
		return bytes.Compare(key, w.key) >= 0
	default:
		return bytes.Compare(key, w.key) >= 0 && bytes.Compare(key, w.end) < 0
	}
}

// watchHub delivers the store's changes to watchers. Synced watchers get
// each revision as it is written; a watcher that starts in the past, or
// whose stream is too slow to take a revision, is unsynced and catches up
// from the history in the backend. Writers never wait for a watcher.
type watchHub struct {
	s *Store

	mu          sync.Mutex
	notifiedRev int64 // every revision up to this one has gone to the synced watchers
	singles     map[string]map[*watcher]struct{}
	ranges      map[*watcher]struct{}
	unsynced    map[*watcher]struct{}

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
		ranges:      make(map[*watcher]struct{}),
		unsynced:    make(map[*watcher]struct{}),
		wake:        make(chan struct{}, 1),
		quit:        make(chan struct{}),
	}
	h.wg.Add(1)
	go h.syncLoop()
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

// EventsReceived tells the stream its reader took n events off Chan (the
// count of events pending, WatchCounts).
func (ws *WatchStream) EventsReceived(n int) { ws.hub.pending.Add(-int64(n)) }

// Chan returns the stream's responses. It is closed by Close.
func (ws *WatchStream) Chan() <-chan WatchResponse { return ws.ch }

// Watch starts a watcher on [key, end) (empty end: the key alone; "\x00":
// every key from key on) from startRev (0: the next revision). id is the
// watcher's ID, or AutoWatchID.
func (ws *WatchStream) Watch(id WatchID, key, end []byte, startRev int64, opts WatchOptions) (WatchID, error) {
	if len(end) > 0 && !isInfiniteEnd(end) && bytes.Compare(key, end) >= 0 {
		return 0, ErrEmptyWatcherRange
	}
	h := ws.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if ws.closed {
		return 0, ErrWatchStreamClosed
	}
	if id == AutoWatchID {
		for ws.watchers[ws.nextID] != nil {
			ws.nextID++
		}
		id = ws.nextID
		ws.nextID++
	} else if ws.watchers[id] != nil {
		return 0, ErrDuplicateWatchID
	}
	w := &watcher{id: id, stream: ws, key: bytes.Clone(key), end: bytes.Clone(end), opts: opts, minRev: startRev}
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
	if w := ws.watchers[id]; w != nil && w.synced {
		h.trySend(ws, WatchResponse{WatchID: id, Revision: h.notifiedRev})
	}
}

// RequestProgressAll sends one progress notification for the whole stream
// if every watcher on it has caught up, and reports whether it did.
func (ws *WatchStream) RequestProgressAll() bool {
	h := ws.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range ws.watchers {
		if !w.synced {
			return false
		}
	}
	return h.trySend(ws, WatchResponse{WatchID: ProgressAllWatchID, Revision: h.notifiedRev})
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
	if len(w.end) == 0 {
		set := h.singles[string(w.key)]
		if set == nil {
			set = make(map[*watcher]struct{})
			h.singles[string(w.key)] = set
		}
		set[w] = struct{}{}
		return
	}
	h.ranges[w] = struct{}{}
}

func (h *watchHub) removeSynced(w *watcher) {
	w.synced = false
	if len(w.end) == 0 {
		set := h.singles[string(w.key)]
		delete(set, w)
		if len(set) == 0 {
			delete(h.singles, string(w.key))
		}
		return
	}
	delete(h.ranges, w)
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

// notify hands the changes of revision rev to the synced watchers. It runs
// at the end of each write transaction and never blocks: a watcher whose
// stream is full becomes unsynced and later reads rev from the history.
func (h *watchHub) notify(rev int64, changes []*mvccpb.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notifiedRev = rev
	if len(h.singles) == 0 && len(h.ranges) == 0 {
		return
	}
	perWatcher := make(map[*watcher][]*mvccpb.Event)
	var order []*watcher
	add := func(w *watcher, ev *mvccpb.Event) {
		if w.minRev > rev || !w.opts.wants(ev) {
			return
		}
		if _, seen := perWatcher[w]; !seen {
			order = append(order, w)
		}
		perWatcher[w] = append(perWatcher[w], ev)
	}
	for _, ev := range changes {
		for w := range h.singles[string(ev.Kv.Key)] {
			add(w, ev)
		}
		for w := range h.ranges {
			if w.matches(ev.Kv.Key) {
				add(w, ev)
			}
		}
	}
	for _, w := range order {
		resp := WatchResponse{WatchID: w.id, Events: h.withPrevKV(w, perWatcher[w]), Revision: rev}
		if !h.trySend(w.stream, resp) {
			h.removeSynced(w)
			w.minRev = rev
			h.unsynced[w] = struct{}{}
			h.poke()
		}
	}
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

// withPrevKV returns evs with PrevKv filled if the watcher asked for it: the
// key's value at the revision before each event (nil if compacted).
func (h *watchHub) withPrevKV(w *watcher, evs []*mvccpb.Event) []*mvccpb.Event {
	if !w.opts.PrevKV {
		return evs
	}
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
