package client

import (
	"context"
	"errors"
	"io"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// errNoWatchStream is returned by RequestProgress while the watch is
// between streams.
var errNoWatchStream = errors.New("watch stream not established")

// WatchResponse is one batch of events, a progress notification, or the
// last message of a watch that ended.
type WatchResponse struct {
	Header          *pb.ResponseHeader
	Events          []*mvccpb.Event
	CompactRevision int64
	Canceled        bool
	CancelReason    string
	// Err says why the watch ended; set only on the last response.
	Err error
}

// IsProgressNotify says whether r is a progress notification: no events,
// but all events up to r.Header.Revision have been delivered.
func (r *WatchResponse) IsProgressNotify() bool {
	return len(r.Events) == 0 && !r.Canceled && r.CompactRevision == 0 && r.Header.GetRevision() != 0
}

// Watch is a watch in progress. Its responses arrive on Responses, which is
// closed when the watch ends.
type Watch struct {
	Responses <-chan WatchResponse

	mu      sync.Mutex
	current pb.Watch_WatchClient // the stream in use, nil between streams
}

// Watch watches the keys of req from req.StartRevision (0: from now) until
// ctx is done, the watch is cancelled by the server (e.g. compacted), or an
// error that cannot be recovered from. When the member serving it is lost,
// the watch resumes on another from the revision after the last one it
// delivered, so that no event is lost or repeated. The server's creation
// acknowledgement is not delivered.
func (c *Client) Watch(ctx context.Context, req *pb.WatchCreateRequest) *Watch {
	out := make(chan WatchResponse)
	w := &Watch{Responses: out}
	go w.run(ctx, c.router, req, out)
	return w
}

// RequestProgress asks the server for a progress notification.
func (w *Watch) RequestProgress() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.current == nil {
		return errNoWatchStream
	}
	return w.current.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_ProgressRequest{ProgressRequest: &pb.WatchProgressRequest{}}})
}

func (w *Watch) setStream(s pb.Watch_WatchClient) {
	w.mu.Lock()
	w.current = s
	w.mu.Unlock()
}

// watchCursor tracks where a watch is: the next revision it must deliver.
type watchCursor struct {
	next int64 // 0 until known when watching from "now"
}

func (w *Watch) run(ctx context.Context, r *router, req *pb.WatchCreateRequest, out chan<- WatchResponse) {
	defer close(out)
	cursor := watchCursor{next: req.GetStartRevision()}
	for attempt := 0; ; attempt++ {
		final, established, err := w.runStream(ctx, r, req, &cursor, out)
		if final || ctx.Err() != nil {
			return
		}
		if !isResumable(err) {
			deliver(ctx, out, WatchResponse{Canceled: true, Err: toError(ctx, err)})
			return
		}
		if established {
			attempt = 0
		}
		r.log.Debug("resuming watch", "key", string(req.GetKey()), "from", cursor.next, "error", err)
		if sleep(ctx, retryDelay(attempt)) != nil {
			return
		}
	}
}

// runStream runs the watch on one stream until it fails. final is true when
// the watch has ended for good; established when the server accepted it.
func (w *Watch) runStream(ctx context.Context, r *router, req *pb.WatchCreateRequest, cursor *watchCursor, out chan<- WatchResponse) (final, established bool, err error) {
	streamCtx, cancel := context.WithCancel(requireLeader(ctx))
	defer cancel()
	s, err := pb.NewWatchClient(r).Watch(streamCtx)
	if err != nil {
		return false, false, err
	}
	create := proto.Clone(req).(*pb.WatchCreateRequest)
	create.StartRevision = cursor.next
	if err := s.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: create}}); err != nil {
		return false, false, err
	}
	w.setStream(s)
	defer w.setStream(nil)
	for {
		resp, err := s.Recv()
		if err != nil {
			return false, established, err
		}
		switch {
		case resp.GetCreated():
			established = true
			if cursor.next == 0 {
				cursor.next = resp.GetHeader().GetRevision() + 1
			}
		case resp.GetCanceled():
			if resp.GetCancelReason() == rpctypes.ErrorDesc(rpctypes.ErrGRPCNoLeader) {
				return false, established, rpctypes.ErrGRPCNoLeader
			}
			end := WatchResponse{Header: resp.GetHeader(), Canceled: true,
				CompactRevision: resp.GetCompactRevision(), CancelReason: resp.GetCancelReason()}
			if end.CompactRevision != 0 {
				end.Err = rpctypes.ErrCompacted
			} else if end.CancelReason != "" {
				end.Err = errors.New(end.CancelReason)
			}
			deliver(ctx, out, end)
			return true, established, nil
		default:
			if batch, ok := cursor.advance(resp); ok && !deliver(ctx, out, batch) {
				return true, established, ctx.Err()
			}
		}
	}
}

// advance moves the cursor past a response and returns what of it is new.
// The events of one revision (a transaction's) arrive in one response and
// share their revision: all of them are new when the revision is.
func (c *watchCursor) advance(resp *pb.WatchResponse) (WatchResponse, bool) {
	batch := WatchResponse{Header: resp.GetHeader()}
	first := c.next
	for _, ev := range resp.GetEvents() {
		if rev := ev.GetKv().GetModRevision(); rev >= first {
			batch.Events = append(batch.Events, ev)
			c.next = max(c.next, rev+1)
		}
	}
	if len(resp.GetEvents()) == 0 {
		// A progress notification: everything up to its revision is delivered.
		c.next = max(c.next, resp.GetHeader().GetRevision()+1)
		return batch, true
	}
	return batch, len(batch.Events) > 0
}

// deliver sends resp unless ctx ends first; it reports whether it did.
func deliver(ctx context.Context, out chan<- WatchResponse, resp WatchResponse) bool {
	select {
	case out <- resp:
		return true
	case <-ctx.Done():
		return false
	}
}

// isResumable says whether a stream that ended with err may be opened
// again, on the same member or another: the member went away, lost its
// leader, was taken out of rotation, or rejected an expired token.
func isResumable(err error) bool {
	if errors.Is(err, io.EOF) || isRejectedToken(err) {
		return true
	}
	switch errorCode(err) {
	case codes.Unavailable, codes.Canceled, codes.Internal:
		return true
	}
	return false
}
