package grpcproxy

import (
	"context"
	"encoding/binary"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/grpcproxy/namespace"
)

// sharedWatches opens the watches on the cluster for the proxy's
// watchers. Each delivers its events once, in order, from its start
// revision on, across the loss of the member serving it (internal/client
// resumes it). The watchers of the same keys (key, range end, prev_kv,
// filters, require-leader) share one watch on the cluster, whatever stream
// or client they come from.
//
// A watcher joins a shared watch that has not yet delivered anything at or
// past the watcher's start revision, and gets its events from that
// revision on; otherwise it opens a new shared watch, which later watchers
// may join. A watcher whose client does not keep up (the queue of its
// stream is full) leaves the shared watch for a watch of its own, from the
// revision it needs next, so that it holds back no one. All of a shared watch's
// watchers do the same when the cluster ends that watch for a reason that
// is not theirs (the token of the watcher that opened it expired, say):
// each goes on with its own token. A compaction ends them all, as it would
// have ended each.
//
// Permissions are checked per watcher when it is created (create reads the
// watched range with the watcher's token); a shared watch then runs with
// the token of the watcher that opened it.
type sharedWatches struct {
	c       *client.Client
	metrics *metrics

	mu     sync.Mutex
	groups map[shareKey][]*sharedGroup
}

func newSharedWatches(c *client.Client, m *metrics) *sharedWatches {
	return &sharedWatches{c: c, metrics: m, groups: map[shareKey][]*sharedGroup{}}
}

// shareKey is what watchers must have in common to share a watch.
type shareKey struct {
	key, end          string
	prevKV            bool
	noPut, noDelete   bool
	requireLeader     bool
	progressRequested bool // the watch's own periodic progress notifications
}

func keyOf(ctx context.Context, req *pb.WatchCreateRequest) shareKey {
	k := shareKey{key: string(req.Key), end: string(req.RangeEnd), prevKV: req.PrevKv, progressRequested: req.ProgressNotify}
	for _, f := range req.Filters {
		switch f {
		case pb.WatchCreateRequest_NOPUT:
			k.noPut = true
		case pb.WatchCreateRequest_NODELETE:
			k.noDelete = true
		}
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	k.requireLeader = len(md.Get(rpctypes.MetadataRequireLeaderKey)) > 0
	return k
}

// sharedGroup is one watch on the cluster and the watchers it serves.
type sharedGroup struct {
	s      *sharedWatches
	key    shareKey
	watch  *client.Watch
	cancel context.CancelFunc

	mu sync.Mutex
	// next is the first revision the watch has not delivered: every event
	// before it has gone to the watchers.
	next int64
	// joinable: the watch cannot be one the cluster refuses as compacted
	// (it started after the revision read at its creation, or it has
	// delivered something).
	joinable bool
	ended    bool
	members  map[*sharedWatch]struct{}
}

// watchSink is where a watch's responses go, in order.
type watchSink interface {
	// offer queues r unless the queue is full.
	offer(r *watchResponse) bool
	// put queues r, waiting for room; false once the watcher has ended.
	put(r *watchResponse) bool
	// done says the watch has queued its last response.
	done()
}

// sharedWatch is one watcher's watch: a member of a group until it leaves
// for a watch of its own.
type sharedWatch struct {
	s    *sharedWatches
	ctx  context.Context // the watcher's: its token; done when it ends
	req  *pb.WatchCreateRequest
	sink watchSink

	mu    sync.Mutex
	group *sharedGroup  // nil once it has a watch of its own
	own   *client.Watch // its own watch, once it has one

	// Under the group's mu while a member:
	next         int64 // the first revision it has not been given
	wantProgress bool  // it asked for a progress notification
}

// Watch starts a watch of req from req.StartRevision for sink until ctx
// ends; current is the cluster's revision read when the watcher was
// created.
func (s *sharedWatches) Watch(ctx context.Context, req *pb.WatchCreateRequest, current int64, sink watchSink) *sharedWatch {
	m := &sharedWatch{s: s, ctx: ctx, req: req, sink: sink, next: req.StartRevision}
	key := keyOf(ctx, req)
	s.mu.Lock()
	var g *sharedGroup
	for _, cand := range s.groups[key] {
		cand.mu.Lock()
		if !cand.ended && cand.joinable && cand.next <= m.next {
			g = cand
			g.add(m)
		}
		cand.mu.Unlock()
		if g != nil {
			break
		}
	}
	if g == nil {
		g = s.open(ctx, key, req, req.StartRevision > current, m)
		s.groups[key] = append(s.groups[key], g)
	}
	s.mu.Unlock()
	context.AfterFunc(ctx, m.leave)
	return m
}

// open starts a group of first, and its watch on the cluster, with the
// context of first but not its end: the watch outlives first if others
// share it.
func (s *sharedWatches) open(ctx context.Context, key shareKey, req *pb.WatchCreateRequest, joinable bool, first *sharedWatch) *sharedGroup {
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g := &sharedGroup{s: s, key: key, cancel: cancel, next: req.StartRevision, joinable: joinable,
		members: map[*sharedWatch]struct{}{}}
	g.add(first)
	g.watch = s.c.Watch(gctx, req)
	go g.run()
	return g
}

// add makes m a member; g.mu is held.
func (g *sharedGroup) add(m *sharedWatch) {
	g.members[m] = struct{}{}
	m.mu.Lock()
	m.group = g
	m.mu.Unlock()
	if len(g.members) > 1 {
		g.s.metrics.watchersCoalescing.Inc()
	}
}

// remove ends m's membership; g.mu is held.
func (g *sharedGroup) remove(m *sharedWatch) {
	delete(g.members, m)
	if len(g.members) > 0 {
		g.s.metrics.watchersCoalescing.Dec()
	}
}

// run passes the watch's responses to the members until it ends.
func (g *sharedGroup) run() {
	for r := range g.watch.Responses {
		if r.Canceled {
			g.end(r)
			return
		}
		g.mu.Lock()
		g.deliver(r)
		empty := len(g.members) == 0
		g.mu.Unlock()
		if empty {
			g.closeIfEmpty()
		}
	}
	g.end(client.WatchResponse{}) // the group was closed: no member is left
}

// deliver passes r to each member, with the events from the member's
// start on; g.mu is held.
func (g *sharedGroup) deliver(r client.WatchResponse) {
	g.joinable = true
	progress := r.IsProgressNotify()
	if progress {
		g.next = max(g.next, r.Header.GetRevision()+1)
	} else if n := len(r.Events); n > 0 {
		g.next = max(g.next, r.Events[n-1].GetKv().GetModRevision()+1)
	}
	if n := len(g.members); n > 1 {
		g.s.metrics.eventsCoalescing.Add(float64(n - 1))
	}
	shared := &watchResponse{WatchResponse: r}
	for m := range g.members {
		out, next := shared, m.next
		if progress {
			if rev := r.Header.GetRevision(); rev+1 < m.next || !(m.wantProgress || g.key.progressRequested) {
				continue // nothing of it is the member's, or it did not ask
			}
			next = r.Header.GetRevision() + 1
		} else {
			if evs := eventsFrom(r.Events, m.next); len(evs) < len(r.Events) {
				if len(evs) == 0 {
					continue
				}
				own := r
				own.Events = evs
				out = &watchResponse{WatchResponse: own}
			}
			next = r.Events[len(r.Events)-1].GetKv().GetModRevision() + 1
		}
		if m.sink.offer(out) {
			m.next = next
			if progress {
				m.wantProgress = false
			}
		} else {
			g.remove(m)
			m.goAlone()
		}
	}
}

// eventsFrom is the events of evs at revision from or later (evs are in
// revision order).
func eventsFrom(evs []*mvccpb.Event, from int64) []*mvccpb.Event {
	for i, ev := range evs {
		if ev.GetKv().GetModRevision() >= from {
			return evs[i:]
		}
	}
	return nil
}

// end ends the group after its watch ended with r: on a compaction every
// member ends with it; for any other reason each member goes on alone.
func (g *sharedGroup) end(r client.WatchResponse) {
	g.s.mu.Lock()
	g.s.drop(g)
	g.mu.Lock()
	g.ended = true
	members := g.members
	g.members = map[*sharedWatch]struct{}{}
	g.mu.Unlock()
	g.s.mu.Unlock()
	g.cancel()
	if n := len(members); n > 1 {
		g.s.metrics.watchersCoalescing.Sub(float64(n - 1))
	}
	for m := range members {
		if r.CompactRevision != 0 {
			m.finish(r)
		} else {
			m.goAlone()
		}
	}
}

// closeIfEmpty ends the group's watch once no member is left.
func (g *sharedGroup) closeIfEmpty() {
	g.s.mu.Lock()
	g.mu.Lock()
	empty := len(g.members) == 0 && !g.ended
	if empty {
		g.ended = true
		g.s.drop(g)
	}
	g.mu.Unlock()
	g.s.mu.Unlock()
	if empty {
		g.cancel()
	}
}

// drop forgets g; s.mu is held.
func (s *sharedWatches) drop(g *sharedGroup) {
	groups := s.groups[g.key]
	for i, cand := range groups {
		if cand == g {
			groups = append(groups[:i], groups[i+1:]...)
			break
		}
	}
	if len(groups) == 0 {
		delete(s.groups, g.key)
	} else {
		s.groups[g.key] = groups
	}
}

// watchResponse is a response of a watch, shared by the watchers it goes
// to: read only.
type watchResponse struct {
	client.WatchResponse
	once    sync.Once
	encoded []byte
}

// body is the response encoded as a WatchResponse without its watch ID
// (header, events, compact revision), the events' keys without prefix:
// encoded once for all the watchers it goes to.
func (r *watchResponse) body(prefix namespace.Prefix) []byte {
	r.once.Do(func() {
		// Cannot fail: the message has no string field set.
		r.encoded, _ = proto.Marshal(&pb.WatchResponse{Header: r.Header, Events: stripped(r.Events, prefix), CompactRevision: r.CompactRevision})
	})
	return r.encoded
}

// withWatchID is a WatchResponse of body (see watchResponse.body) with the
// watch ID id: protobuf's fields may come in any order.
func withWatchID(id int64, body []byte) frame {
	b := make([]byte, 0, len(body)+1+binary.MaxVarintLen64)
	if id != 0 {
		b = protowire.AppendTag(b, watchIDField, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(id))
	}
	return append(b, body...)
}

// watchIDField is the number of WatchResponse's watch_id.
const watchIDField = 2

// RequestProgress asks for a progress notification: of its own watch, or
// of the group's, which passes it to the members that asked.
func (m *sharedWatch) RequestProgress() error {
	m.mu.Lock()
	g, own := m.group, m.own
	m.mu.Unlock()
	if own != nil {
		return own.RequestProgress()
	}
	if g == nil {
		return nil // between the group and its own watch: the client asks again
	}
	g.mu.Lock()
	m.wantProgress = true
	g.mu.Unlock()
	return g.watch.RequestProgress()
}

// leave ends the watcher's membership when its context ends. Alone, its
// own watch ends with the context.
func (m *sharedWatch) leave() {
	m.mu.Lock()
	g := m.group
	m.mu.Unlock()
	if g == nil {
		return
	}
	g.mu.Lock()
	_, member := g.members[m]
	if member {
		g.remove(m)
		m.sink.done()
	}
	empty := len(g.members) == 0
	g.mu.Unlock()
	if member && empty {
		g.closeIfEmpty()
	}
}

// finish gives the member the last response of its watch.
func (m *sharedWatch) finish(r client.WatchResponse) {
	m.mu.Lock()
	m.group = nil
	m.mu.Unlock()
	go func() {
		defer m.sink.done()
		m.sink.put(&watchResponse{WatchResponse: r})
	}()
}

// goAlone moves the member, no longer in a group, to a watch of its own
// from the revision it needs next, with its own token. The responses
// already queued come first.
func (m *sharedWatch) goAlone() {
	req := proto.Clone(m.req).(*pb.WatchCreateRequest)
	req.StartRevision = m.next
	m.mu.Lock()
	m.group = nil
	m.own = m.s.c.Watch(m.ctx, req)
	own := m.own
	m.mu.Unlock()
	go func() {
		defer m.sink.done()
		for r := range own.Responses {
			if !m.sink.put(&watchResponse{WatchResponse: r}) {
				return
			}
		}
	}()
}
