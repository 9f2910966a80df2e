package grpcproxy

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/grpcproxy/namespace"
)

const watchMethod = "/etcdserverpb.Watch/Watch"

// watchStream is one client's Watch stream: its watchers, under the IDs
// the client knows.
type watchStream struct {
	p      *Proxy
	stream grpc.ServerStream
	ctx    context.Context // the cluster's side: the client's token, cancelled when the stream ends

	// out are the responses to send, in order: one goroutine sends them
	// all, so that the watchers of a stream queue their responses rather
	// than take turns on it.
	out *sendQueue

	mu       sync.Mutex
	watchers map[int64]*watcher
	nextID   int64
}

// watcher is one watch of a client stream. Its watch queues its responses
// on the stream (it is the watch's watchSink).
type watcher struct {
	ws     *watchStream
	id     int64
	ctx    context.Context // ended by cancel
	cancel context.CancelFunc
	ended  chan struct{}                     // closed once the watch has queued its last response
	header atomic.Pointer[pb.ResponseHeader] // of the last response queued
	watch  *sharedWatch
}

// watch serves a client's Watch stream until the client ends it.
func (p *Proxy) watch(stream grpc.ServerStream) error {
	ctx, cancel := context.WithCancel(stream.Context())
	ws := &watchStream{p: p, stream: stream, ctx: outgoing(ctx), watchers: map[int64]*watcher{},
		out: newSendQueue()}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		ws.sendLoop(ctx, cancel)
	}()
	defer func() {
		cancel()
		<-sent // no send once the call has returned
	}()
	defer ws.stopAll()
	for {
		req := &pb.WatchRequest{}
		if err := stream.RecvMsg(req); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		var err error
		switch r := req.RequestUnion.(type) {
		case *pb.WatchRequest_CreateRequest:
			err = ws.create(r.CreateRequest)
		case *pb.WatchRequest_CancelRequest:
			err = ws.cancel(r.CancelRequest.GetWatchId())
		case *pb.WatchRequest_ProgressRequest:
			err = ws.progress()
		}
		if err != nil {
			return err
		}
	}
}

// send queues resp for the client; it fails once the stream has ended.
func (ws *watchStream) send(resp *pb.WatchResponse) error {
	b, err := proto.Marshal(resp)
	if err != nil {
		return err
	}
	return ws.sendFrame(b)
}

// sendFrame queues an encoded response for the client.
func (ws *watchStream) sendFrame(b frame) error {
	return ws.out.put(ws.ctx, &b)
}

// sendLoop sends the queued responses until ctx ends; a failed send ends
// the stream's context.
func (ws *watchStream) sendLoop(ctx context.Context, cancel context.CancelFunc) {
	for {
		batch, err := ws.out.take(ctx)
		if err != nil {
			return
		}
		for _, f := range batch {
			if err := ws.stream.SendMsg(f); err != nil {
				cancel()
				return
			}
		}
	}
}

// create starts a watcher: the cluster's current revision is read first,
// so that a watch from "now" starts after it and the creation's answer
// carries it, as a member's does.
func (ws *watchStream) create(cr *pb.WatchCreateRequest) error {
	up := proto.Clone(cr).(*pb.WatchCreateRequest)
	if ws.p.ns.on() {
		if len(up.Key) == 0 {
			return ws.send(&pb.WatchResponse{WatchId: -1, Created: true, Canceled: true, CancelReason: rpctypes.ErrorDesc(rpctypes.ErrGRPCEmptyKey)})
		}
		ws.p.ns.prefix.WatchCreateRequest(up)
	}
	ws.mu.Lock()
	id, ok := ws.assignID(cr.WatchId)
	ws.mu.Unlock()
	if !ok {
		return ws.send(&pb.WatchResponse{WatchId: -1, Created: true, Canceled: true, CancelReason: "mvcc: duplicate watch ID provided on the WatchStream"})
	}
	key := up.Key
	if len(key) == 0 {
		key = []byte{0} // a watch of every key from the first: a read needs a key
	}
	// The read is with the watcher's token over the watched range: it is
	// the permission check of a watcher that may share a watch opened by
	// another. Serializable: "now" is a member's revision, as for a watch
	// created on a member, and a thousand watchers cost the cluster no
	// round of the leader's.
	now, err := ws.p.nowReads.read(ws.ctx, key, up.RangeEnd)
	if err != nil {
		ws.release(id)
		return ws.send(&pb.WatchResponse{WatchId: -1, Created: true, Canceled: true, CancelReason: rpctypes.ErrorDesc(err)})
	}
	if up.StartRevision == 0 {
		up.StartRevision = now.GetHeader().GetRevision() + 1
	}
	// The proxy's client gets whole responses; it chooses its own IDs.
	up.WatchId, up.Fragment = 0, false
	wctx, cancel := context.WithCancel(ws.ctx)
	w := &watcher{ws: ws, id: id, ctx: wctx, cancel: cancel, ended: make(chan struct{})}
	w.header.Store(now.GetHeader())
	if err := ws.send(&pb.WatchResponse{Header: now.GetHeader(), WatchId: id, Created: true}); err != nil {
		cancel()
		ws.release(id)
		return err
	}
	ws.mu.Lock()
	ws.watchers[id] = w
	ws.mu.Unlock()
	w.watch = ws.p.watches.Watch(wctx, up, now.GetHeader().GetRevision(), w)
	return nil
}

// assignID is the ID of a new watcher: the client's choice if it made one
// (false if that ID is taken), or the lowest free one from the last given.
func (ws *watchStream) assignID(asked int64) (int64, bool) {
	if asked != 0 {
		if _, taken := ws.watchers[asked]; taken {
			return 0, false
		}
		ws.watchers[asked] = nil
		ws.out.watchers.Add(1)
		return asked, true
	}
	for {
		id := ws.nextID
		ws.nextID++
		if _, taken := ws.watchers[id]; !taken {
			ws.watchers[id] = nil
			ws.out.watchers.Add(1)
			return id, true
		}
	}
}

func (ws *watchStream) release(id int64) {
	ws.mu.Lock()
	if _, ok := ws.watchers[id]; ok {
		delete(ws.watchers, id)
		ws.out.watchers.Add(-1)
	}
	ws.mu.Unlock()
}

// frame is r as the client gets it, under the watcher's ID.
func (w *watcher) frame(r *watchResponse) (frame, error) {
	if r.Header != nil {
		w.header.Store(r.Header)
	}
	if r.Header != nil && !r.Canceled {
		// Events or a progress notification: the same message for every
		// watcher of the response but for the ID.
		return withWatchID(w.id, r.body(w.ws.p.ns.prefix)), nil
	}
	resp := &pb.WatchResponse{Header: w.header.Load(), WatchId: w.id, Events: stripped(r.Events, w.ws.p.ns.prefix),
		CompactRevision: r.CompactRevision, Canceled: r.Canceled, CancelReason: r.CancelReason}
	if r.Canceled && resp.CancelReason == "" && r.Err != nil && r.CompactRevision == 0 {
		resp.CancelReason = rpctypes.ErrorDesc(r.Err)
	}
	return proto.Marshal(resp)
}

// offer queues r unless the stream's queue is full.
func (w *watcher) offer(r *watchResponse) bool {
	f, err := w.frame(r)
	if err != nil {
		return false
	}
	return w.ws.out.offer(&f)
}

// put queues r, waiting for room; false once the watcher or its stream
// has ended. A cancellation by the cluster ends the watcher.
func (w *watcher) put(r *watchResponse) bool {
	f, err := w.frame(r)
	if err != nil {
		return false
	}
	if w.ws.out.put(w.ctx, &f) != nil {
		return false
	}
	if r.Canceled {
		w.cancel()
		w.ws.release(w.id)
	}
	return true
}

// done says the watch has queued its last response.
func (w *watcher) done() { close(w.ended) }

// cancel ends a watcher at the client's request: no response of it
// follows the cancellation's.
func (ws *watchStream) cancel(id int64) error {
	ws.mu.Lock()
	w := ws.watchers[id]
	ws.mu.Unlock()
	if w == nil {
		return nil
	}
	w.cancel()
	<-w.ended
	ws.release(id)
	return ws.send(&pb.WatchResponse{Header: w.header.Load(), WatchId: id, Canceled: true})
}

// progress asks every watcher's watch for a progress notification, which
// reaches the client under that watcher's ID; with no watcher, the
// cluster's revision is the answer.
func (ws *watchStream) progress() error {
	watchers := ws.list()
	if len(watchers) == 0 {
		now, err := ws.p.client.KV.Range(ws.ctx, &pb.RangeRequest{Key: ws.p.ns.prefix.Key([]byte{0}), Limit: 1, KeysOnly: true})
		if err != nil {
			return nil // no revision to tell (the client may not read that key): no answer
		}
		return ws.send(&pb.WatchResponse{Header: now.GetHeader(), WatchId: -1})
	}
	for _, w := range watchers {
		_ = w.watch.RequestProgress() // a watch between two streams cannot be asked: the client asks again
	}
	return nil
}

// list is the stream's watchers.
func (ws *watchStream) list() []*watcher {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var all []*watcher
	for _, w := range ws.watchers {
		if w != nil {
			all = append(all, w)
		}
	}
	return all
}

// stopAll ends every watcher when the client's stream ends.
func (ws *watchStream) stopAll() {
	for _, w := range ws.list() {
		w.cancel()
		<-w.ended
	}
}

// stripped is evs with the namespace's prefix taken off their keys: copies,
// as the events may be shared with other watchers.
func stripped(evs []*mvccpb.Event, prefix namespace.Prefix) []*mvccpb.Event {
	if len(prefix) == 0 || len(evs) == 0 {
		return evs
	}
	out := make([]*mvccpb.Event, len(evs))
	for i, ev := range evs {
		out[i] = proto.Clone(ev).(*mvccpb.Event)
	}
	prefix.Events(out)
	return out
}
