package grpcproxy

import (
	"bytes"
	"container/list"
	"context"
	"math"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// The range cache answers serializable reads of the current revision that
// come without a token, as etcd's proxy does, with these differences that
// keep it as strict as the cluster:
//   - A read with an auth token is never answered from the cache: the
//     answer depends on the user's permissions, which the proxy cannot
//     check (etcd's cache answers any user with what another one read).
//     Reads without a token are all made with the proxy's own identity.
//   - An answer lives until the proxy's watch of every key sees a change
//     in its range, and at most cacheMaxAge, which bounds how long a change
//     of the proxy's own permissions (or auth being enabled) goes unseen.
//   - Linearizable reads, reads at a past revision and reads that require
//     a leader go to the cluster.
const (
	cacheMaxAge  = time.Second
	cacheEntries = 1024
	// cacheRetry is how long the cache stays off after its watch failed
	// (e.g. the proxy may not read every key).
	cacheRetry = 10 * time.Second
)

// rangeCache holds answers of serializable reads, by their encoded
// request, the least recently used dropped first.
type rangeCache struct {
	metrics *metrics
	now     func() time.Time

	mu      sync.Mutex
	entries map[string]*cacheEntry
	lru     *list.List // of *cacheEntry, most recently used first
	// watching: the invalidating watch runs, from revision watchedFrom on;
	// lastEvent is the revision of the last event it has applied. An answer
	// is kept only if the watch will show every change after it.
	watching    bool
	watchedFrom int64
	lastEvent   int64
	retryAt     time.Time // no watch is started before
}

type cacheEntry struct {
	request  string
	key, end []byte
	resp     *pb.RangeResponse
	stored   time.Time
	elem     *list.Element
}

func newRangeCache(m *metrics) *rangeCache {
	return &rangeCache{metrics: m, now: time.Now, entries: map[string]*cacheEntry{}, lru: list.New()}
}

// cacheable says whether a read may be answered from the cache, and its
// key there. ctx is the outgoing context of the call.
func cacheable(ctx context.Context, r *pb.RangeRequest) (string, bool) {
	if !r.Serializable || r.Revision != 0 {
		return "", false
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	if len(md.Get(rpctypes.TokenFieldNameGRPC)) > 0 || len(md.Get(rpctypes.MetadataRequireLeaderKey)) > 0 {
		return "", false
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// get is the cached answer to request, if there is a fresh one.
func (c *rangeCache) get(request string) (*pb.RangeResponse, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[request]
	if ok && c.now().Sub(e.stored) > cacheMaxAge {
		c.drop(e)
		ok = false
	}
	if !ok {
		c.metrics.cacheMisses.Inc()
		return nil, false
	}
	c.lru.MoveToFront(e.elem)
	c.metrics.cacheHits.Inc()
	return e.resp, true
}

// put keeps resp, the cluster's answer to r (encoded as request), unless
// the watch may already have passed a change it does not show.
func (c *rangeCache) put(request string, r *pb.RangeRequest, resp *pb.RangeResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rev := resp.GetHeader().GetRevision()
	if !c.watching || rev < c.watchedFrom || rev < c.lastEvent {
		return
	}
	if old, ok := c.entries[request]; ok {
		c.drop(old)
	}
	e := &cacheEntry{request: request, key: r.Key, end: r.RangeEnd, resp: resp, stored: c.now()}
	e.elem = c.lru.PushFront(e)
	c.entries[request] = e
	for c.lru.Len() > cacheEntries {
		c.drop(c.lru.Back().Value.(*cacheEntry))
	}
	c.metrics.cacheKeys.Set(float64(len(c.entries)))
}

// drop forgets e; c.mu is held.
func (c *rangeCache) drop(e *cacheEntry) {
	c.lru.Remove(e.elem)
	delete(c.entries, e.request)
	c.metrics.cacheKeys.Set(float64(len(c.entries)))
}

// changed forgets every answer whose range holds key, changed at rev.
func (c *rangeCache) changed(key []byte, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastEvent = max(c.lastEvent, rev)
	for _, e := range c.entries {
		if inRange(key, e.key, e.end) {
			c.drop(e)
		}
	}
}

// wrote forgets, at once, the answers a write through the proxy changed,
// so that its client reads it back from the proxy: a put's key, every
// answer for a delete or a txn.
func (c *rangeCache) wrote(req, resp any) {
	switch r := resp.(type) {
	case *pb.PutResponse:
		c.changed(req.(*pb.PutRequest).Key, r.GetHeader().GetRevision())
	case *pb.DeleteRangeResponse, *pb.TxnResponse:
		c.mu.Lock()
		defer c.mu.Unlock()
		c.lastEvent = max(c.lastEvent, r.(interface{ GetHeader() *pb.ResponseHeader }).GetHeader().GetRevision())
		c.clear()
	}
}

// clear forgets every answer; c.mu is held.
func (c *rangeCache) clear() {
	for _, e := range c.entries {
		c.drop(e)
	}
}

// inRange says whether key is in [start, end) as a RangeRequest means it:
// an empty end is start alone, "\x00" every key from start on.
func inRange(key, start, end []byte) bool {
	switch {
	case len(end) == 0:
		return bytes.Equal(key, start)
	case bytes.Equal(end, []byte{0}):
		return bytes.Compare(key, start) >= 0
	default:
		return bytes.Compare(key, start) >= 0 && bytes.Compare(key, end) < 0
	}
}

// startWatch reports whether the caller should start the invalidating
// watch: it is not running, and not held off after a failure.
func (c *rangeCache) startWatch() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watching || c.now().Before(c.retryAt) {
		return false
	}
	// Nothing is kept until the watch knows where it starts.
	c.watching, c.watchedFrom, c.lastEvent = true, math.MaxInt64, 0
	return true
}

// watchStarted records that the watch shows every change after rev.
func (c *rangeCache) watchStarted(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchedFrom = rev
}

// watchEnded forgets every answer: changes are no longer seen.
func (c *rangeCache) watchEnded() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clear()
	c.watching = false
	c.retryAt = c.now().Add(cacheRetry)
}

// cacheWatch runs the cache's watch of every key of the proxy's clients
// until it fails or ctx ends. Its start revision is read first, so that
// answers read at that revision or later can be kept.
func (p *Proxy) cacheWatch(ctx context.Context) {
	defer p.cache.watchEnded()
	key, end := p.ns.prefix.Key(nil), p.ns.prefix.RangeEnd([]byte{0})
	if len(key) == 0 {
		key = []byte{0}
	}
	rctx, cancel := context.WithTimeout(ctx, nowReadTimeout)
	resp, err := p.client.KV.Range(rctx, &pb.RangeRequest{Key: key, RangeEnd: end, Limit: 1, KeysOnly: true, Serializable: true})
	cancel()
	if err != nil {
		p.log.Warn("range cache off: cannot read the current revision", "retry-in", cacheRetry, "error", err)
		return
	}
	rev := resp.GetHeader().GetRevision()
	p.cache.watchStarted(rev)
	w := p.client.Watch(ctx, &pb.WatchCreateRequest{Key: key, RangeEnd: end, StartRevision: rev + 1})
	for r := range w.Responses {
		if r.Canceled {
			if ctx.Err() == nil {
				p.log.Warn("range cache off: its watch ended", "reason", r.CancelReason, "retry-in", cacheRetry, "error", r.Err)
			}
			return
		}
		for _, ev := range r.Events {
			p.cache.changed(ev.Kv.Key, ev.Kv.ModRevision)
		}
	}
}
