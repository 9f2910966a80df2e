package api

import (
	"io"
	"math"
	"slices"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/pkg/failpoint"
	"github.com/cairnkv/cairn/pkg/store"
)

// ProgressNotifyInterval is how often watchers created with progress_notify
// get a progress notification, as etcd's default.
var ProgressNotifyInterval = 10 * time.Minute

// watchSendBurst is how many responses a stream sends in a row, as long as
// the store has more, before it looks at its other work (progress
// notifications, the end of the stream).
const watchSendBurst = 128

type watchServer struct {
	pb.UnimplementedWatchServer
	a *API
}

// Watch serves one multiplexed watch stream.
func (ws *watchServer) Watch(stream grpc.BidiStreamingServer[pb.WatchRequest, pb.WatchResponse]) error {
	replaced := ws.a.s.StoreReplaced()
	st := ws.a.s.Store()
	w := &watchStream{a: ws.a, grpc: stream, ms: st.NewWatchStream(), progress: map[store.WatchID]bool{}, fragment: map[store.WatchID]bool{},
		readers: map[store.WatchID]watchReader{}, authRev: ws.a.s.AuthStore().Revision(), limit: ws.a.s.Config().MaxRequestBytes}
	defer w.close()
	recvErr := make(chan error, 1)
	go func() { recvErr <- w.recvLoop() }()
	ticker := time.NewTicker(ProgressNotifyInterval)
	defer ticker.Stop()
	for {
		select {
		case err := <-recvErr:
			if err == io.EOF {
				// The client closed its side (a JSON gateway request
				// whose body has ended): the watchers keep sending, as
				// etcd's, until the stream's context ends.
				recvErr = nil
				continue
			}
			return err
		case <-stream.Context().Done():
			// Canceled (or DeadlineExceeded) as the status, as etcd's.
			return status.FromContextError(stream.Context().Err()).Err()
		case <-replaced:
			// The member installed a snapshot: the client resumes its
			// watchers on the new store from the revisions it has seen.
			return status.Error(codes.Unavailable, "etcdserver: the member's store was replaced by a snapshot; watch again")
		case <-ticker.C:
			w.mu.Lock()
			for id := range w.progress {
				w.ms.RequestProgress(id)
			}
			w.mu.Unlock()
		case resp, ok := <-w.ms.Chan():
			// Then what else the store has handed over, up to a bound
			// before the other cases are looked at again: a receive
			// that does not wait costs less than this select.
			// A watcher's responses found together are sent as one.
			if !ok {
				return nil
			}
			batch := []store.WatchResponse{resp}
			for ok && len(batch) < watchSendBurst {
				select {
				case resp, ok = <-w.ms.Chan():
					if ok {
						batch = append(batch, resp)
					}
					continue
				default:
				}
				break
			}
			batch = w.recheckAuth(batch)
			for _, r := range batch {
				w.ms.EventsReceived(len(r.Events))
			}
			for _, o := range coalesce(batch) {
				start := time.Now()
				if err := w.send(o); err != nil {
					return err
				}
				w.a.observeWatchSend(len(o.r.Events), time.Since(start))
			}
			if !ok {
				return nil
			}
		}
	}
}

type watchStream struct {
	a        *API
	grpc     grpc.BidiStreamingServer[pb.WatchRequest, pb.WatchResponse]
	ms       *store.WatchStream
	sendMu   sync.Mutex
	mu       sync.Mutex
	progress map[store.WatchID]bool // watchers created with progress_notify
	fragment map[store.WatchID]bool // watchers that accept fragmented responses
	readers  map[store.WatchID]watchReader
	// authRev is the auth revision the watchers were last checked
	// against: the oldest one, if they were not all checked at once.
	authRev uint64

	limit int // the member's MaxRequestBytes, the size of a fragment

	// The encoded header of the last event response (sending goroutine only).
	hdr      headerKey
	hdrBytes []byte
}

// watchReader is who reads through a watcher, and what: checked again
// when the auth state changes.
type watchReader struct {
	user     string
	key, end []byte
}

// headerKey is the content of a response header.
type headerKey struct {
	clusterID, memberID uint64
	rev                 int64
	term                uint64
}

// close ends the store's stream and takes what it still holds, so that
// its events do not stay counted as pending.
func (w *watchStream) close() {
	w.ms.Close()
	for resp := range w.ms.Chan() {
		w.ms.EventsReceived(len(resp.Events))
	}
}

func (w *watchStream) recvLoop() error {
	for {
		req, err := w.grpc.Recv()
		if err != nil {
			return err
		}
		switch r := req.RequestUnion.(type) {
		case *pb.WatchRequest_CreateRequest:
			w.create(r.CreateRequest)
		case *pb.WatchRequest_CancelRequest:
			id := store.WatchID(r.CancelRequest.WatchId)
			if err := w.ms.Cancel(id); err == nil {
				w.mu.Lock()
				w.forget(id)
				w.mu.Unlock()
				w.sendControl(&pb.WatchResponse{Header: w.a.header(0), WatchId: int64(id), Canceled: true})
			}
		case *pb.WatchRequest_ProgressRequest:
			w.ms.RequestProgressAll()
		}
	}
}

func (w *watchStream) create(cr *pb.WatchCreateRequest) {
	// auth: the stream's token is checked at each creation, as etcd does,
	// and the watcher is checked again at each later change of the auth
	// state (recheckAuth) from the revision it was checked at.
	as := w.a.s.AuthStore()
	authRev := as.Revision()
	if err := w.a.checkWatch(w.grpc.Context(), cr); err != nil {
		w.sendControl(&pb.WatchResponse{Header: w.a.header(0), WatchId: -1, Created: true, Canceled: true, CancelReason: toGRPC(err).Error()})
		return
	}
	id := store.WatchID(cr.WatchId)
	if id == 0 {
		id = store.AutoWatchID
	}
	opts := store.WatchOptions{PrevKV: cr.PrevKv}
	for _, f := range cr.Filters {
		switch f {
		case pb.WatchCreateRequest_NOPUT:
			opts.NoPut = true
		case pb.WatchCreateRequest_NODELETE:
			opts.NoDelete = true
		}
	}
	key, end := cr.Key, cr.RangeEnd
	if len(key) == 0 {
		key = []byte{0}
	}
	w.mu.Lock()
	// The created response must precede the watcher's first events.
	w.sendMu.Lock()
	got, err := w.ms.Watch(id, key, end, cr.StartRevision, opts)
	resp := &pb.WatchResponse{Header: w.a.header(0), WatchId: int64(got), Created: true}
	if err != nil {
		// As etcd: no ID whatever was asked, and the reason as the
		// message of the error's gRPC status ("etcdserver: mvcc: required
		// revision has been compacted" for a negative start revision).
		resp.WatchId = -1
		resp.Canceled = true
		resp.CancelReason = status.Convert(toGRPC(err)).Message()
	} else {
		info, _ := w.a.authInfo(w.grpc.Context()) // checkWatch had it
		w.readers[got] = watchReader{user: info.Username, key: cr.Key, end: cr.RangeEnd}
		w.authRev = min(w.authRev, authRev)
		if cr.ProgressNotify {
			w.progress[got] = true
		}
		if cr.Fragment {
			w.fragment[got] = true
		}
	}
	start := time.Now()
	w.grpc.Send(resp)
	w.a.metrics.WatchSendControl.Observe(time.Since(start).Seconds())
	w.sendMu.Unlock()
	w.mu.Unlock()
}

// forget drops what the stream keeps of a watcher that has ended. The
// caller holds mu.
func (w *watchStream) forget(id store.WatchID) {
	delete(w.progress, id)
	delete(w.fragment, id)
	delete(w.readers, id)
}

// recheckAuth, when the auth state has changed since the watchers were
// checked, cancels those whose user may no longer read all they watch
// ("etcdserver: permission denied"), and returns batch without their
// responses. Called with each batch taken from the store before it is
// sent, it keeps every event of a revision written after the change from
// them: the apply loop changed the auth state before it wrote that
// revision, so the batch that carries it finds the new auth revision.
func (w *watchStream) recheckAuth(batch []store.WatchResponse) []store.WatchResponse {
	as := w.a.s.AuthStore()
	rev := as.Revision()
	w.mu.Lock()
	if rev == w.authRev {
		w.mu.Unlock()
		return batch
	}
	w.authRev = rev
	var ended []*pb.WatchResponse
	for id, r := range w.readers {
		// The user may read now, whatever the revision of the token
		// the stream came with.
		err := as.IsRangePermitted(auth.Info{Username: r.user, Revision: math.MaxUint64}, r.key, r.end)
		if err == nil || w.ms.Cancel(id) != nil {
			continue
		}
		w.forget(id)
		ended = append(ended, &pb.WatchResponse{Header: w.a.header(0), WatchId: int64(id), Canceled: true,
			CancelReason: status.Convert(toGRPC(err)).Message()})
	}
	if len(ended) == 0 {
		w.mu.Unlock()
		return batch
	}
	// Their responses the store has handed over: in batch, and in the
	// channel, where all come before those of any watcher that takes one
	// of their IDs again, as creation waits for mu.
	for more := true; more; {
		select {
		case r, ok := <-w.ms.Chan():
			if ok {
				batch = append(batch, r)
			}
			more = ok
		default:
			more = false
		}
	}
	w.mu.Unlock()
	kept := batch[:0]
	for _, r := range batch {
		if slices.ContainsFunc(ended, func(e *pb.WatchResponse) bool { return e.WatchId == int64(r.WatchID) }) {
			w.ms.EventsReceived(len(r.Events))
			continue
		}
		kept = append(kept, r)
	}
	for _, e := range ended {
		w.sendControl(e)
	}
	return kept
}

// sendControl sends a response of the stream's own (created, canceled).
func (w *watchStream) sendControl(resp *pb.WatchResponse) {
	start := time.Now()
	w.sendRaw(resp)
	w.a.metrics.WatchSendControl.Observe(time.Since(start).Seconds())
}

func (w *watchStream) sendRaw(resp *pb.WatchResponse) error {
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	return w.grpc.Send(resp)
}

// outgoing is a response to send: one of the store's, or the events of
// several of one watcher's, one after the other, with the last one's
// revision. enc and more are the encodings of its parts' events, if every
// part has one.
type outgoing struct {
	r    store.WatchResponse
	enc  *store.EncodedEvents
	more []*store.EncodedEvents
}

// coalescedEvents is how many events coalesce gathers in one response at
// most, before it starts another: a watcher catching up gets windows of
// about 1,000 revisions, and a batch of 128 of them merged made sends of
// tens of MB, each of which a watch created on the same stream waited for
// (20 s for the creation of 1,000 watchers on 10 streams).
const coalescedEvents = 1000

// coalesce merges the event responses of each watcher in batch into one,
// as long as no other response of that watcher (a progress notification,
// its end) or of the whole stream comes between them, up to
// coalescedEvents events; the order of each watcher's responses, and of
// the stream's progress notifications after them, stays as it was.
func coalesce(batch []store.WatchResponse) []outgoing {
	out := make([]outgoing, 0, len(batch))
	var open map[store.WatchID]int // the watcher's event response still open to more
	for _, r := range batch {
		events := len(r.Events) > 0 && r.CompactRevision == 0
		if !events {
			if r.WatchID == store.ProgressAllWatchID {
				clear(open)
			} else {
				delete(open, r.WatchID)
			}
			out = append(out, outgoing{r: r})
			continue
		}
		if i, ok := open[r.WatchID]; ok && len(out[i].r.Events) < coalescedEvents {
			o := &out[i]
			if o.enc != nil && r.Encoded != nil {
				o.more = append(o.more, r.Encoded)
			} else {
				o.enc, o.more = nil, nil
			}
			// A copy: the store shares its event slices among watchers.
			o.r.Events = append(slices.Clip(o.r.Events), r.Events...)
			o.r.Revision = r.Revision
			continue
		}
		if open == nil {
			open = make(map[store.WatchID]int)
		}
		open[r.WatchID] = len(out)
		out = append(out, outgoing{r: r, enc: r.Encoded})
	}
	return out
}

// send turns a response into gRPC responses: events, a progress
// notification, or the end of a compacted watcher.
func (w *watchStream) send(o outgoing) error {
	failpoint.Hit("beforeSendWatchResponse")
	r := o.r
	w.mu.Lock()
	fragment := w.fragment[r.WatchID]
	w.mu.Unlock()
	if o.enc != nil && r.CompactRevision == 0 {
		// The events as the store encoded them once for every watcher
		// that gets them, after this response's own header and ID.
		s := w.a.s
		hdr := headerKey{s.ClusterID(), s.ID(), r.Revision, s.Term()}
		if m, err := w.encoded(hdr, int64(r.WatchID), o.enc, o.more...); err == nil && (!fragment || m.EncodedSize() <= w.limit) {
			return w.sendMsg(m)
		}
	}
	resp := &pb.WatchResponse{Header: w.a.header(r.Revision), WatchId: int64(r.WatchID)}
	if r.CompactRevision != 0 {
		// As etcd: no revision in the header and no reason; the client
		// explains the cancellation from CompactRevision.
		resp.Header.Revision = 0
		resp.CompactRevision = r.CompactRevision
		resp.Canceled = true
		w.mu.Lock()
		w.forget(r.WatchID)
		w.mu.Unlock()
		return w.sendRaw(resp)
	}
	limit := w.limit
	resp.Events = make([]*mvccpb.Event, len(r.Events))
	copy(resp.Events, r.Events)
	if !fragment || proto.Size(resp) <= limit {
		return w.sendRaw(resp)
	}
	for _, part := range fragmentResponse(resp, limit) {
		if err := w.sendRaw(part); err != nil {
			return err
		}
	}
	return nil
}

// encoded is the watch response with header hdr, watch ID id and the
// events of evs and more, in wire form: the fields in the order of their
// numbers, as proto.Marshal writes them (the events field repeated, so the
// encodings of several sets of events follow each other as they are).
func (w *watchStream) encoded(hdr headerKey, id int64, evs *store.EncodedEvents, more ...*store.EncodedEvents) (*encodedMessage, error) {
	events, err := evs.Bytes()
	if err != nil {
		return nil, err
	}
	var tails [][]byte
	if len(more) > 0 {
		tails = make([][]byte, 0, 1+len(more))
		tails = append(tails, events)
		for _, e := range more {
			b, err := e.Bytes()
			if err != nil {
				return nil, err
			}
			tails = append(tails, b)
		}
	}
	if w.hdrBytes == nil || w.hdr != hdr {
		b, err := proto.Marshal(&pb.ResponseHeader{ClusterId: hdr.clusterID, MemberId: hdr.memberID, Revision: hdr.rev, RaftTerm: hdr.term})
		if err != nil {
			return nil, err
		}
		w.hdr, w.hdrBytes = hdr, b
	}
	m := &encodedMessage{tail: events, tails: tails}
	b := protowire.AppendTag(m.prefix[:0], 1, protowire.BytesType) // header
	b = protowire.AppendBytes(b, w.hdrBytes)
	if id != 0 {
		b = protowire.AppendTag(b, 2, protowire.VarintType) // watch_id
		b = protowire.AppendVarint(b, uint64(id))
	}
	m.b = b
	return m, nil
}

// sendMsg sends a message already in its wire form.
func (w *watchStream) sendMsg(m *encodedMessage) error {
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	return w.grpc.SendMsg(m)
}

// fragmentResponse splits a response whose size passes limit into parts
// of whole events, each marked as a fragment but the last.
func fragmentResponse(resp *pb.WatchResponse, limit int) []*pb.WatchResponse {
	var parts []*pb.WatchResponse
	cur := &pb.WatchResponse{Header: resp.Header, WatchId: resp.WatchId}
	size := 0
	for _, ev := range resp.Events {
		n := proto.Size(ev)
		if len(cur.Events) > 0 && size+n > limit {
			cur.Fragment = true
			parts = append(parts, cur)
			cur = &pb.WatchResponse{Header: resp.Header, WatchId: resp.WatchId}
			size = 0
		}
		cur.Events = append(cur.Events, ev)
		size += n
	}
	return append(parts, cur)
}
