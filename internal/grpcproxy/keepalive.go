package grpcproxy

import (
	"context"
	"io"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

const keepAliveMethod = "/etcdserverpb.Lease/LeaseKeepAlive"

// keepAlives coalesces lease keep-alives: the clients' LeaseKeepAlive
// streams share one stream to the cluster per token (the cluster checks a
// renewal against the token of its stream: write on the lease's keys), and
// a lease renewed by several clients at once is renewed once, its answer
// going to each of them.
type keepAlives struct {
	conn grpc.ClientConnInterface

	mu   sync.Mutex
	ups  map[string]*keepAliveUpstream // by the passed metadata of its streams
	refs map[*keepAliveUpstream]int    // client streams using each
}

// keepAliveUpstream is one LeaseKeepAlive stream to the cluster and the
// renewals waiting for its answers.
type keepAliveUpstream struct {
	k      *keepAlives
	id     string
	ctx    context.Context
	cancel context.CancelFunc
	stream grpc.ClientStream

	sendMu  sync.Mutex
	mu      sync.Mutex
	dead    bool
	waiting map[int64][]keepAliveWaiter // by lease
}

// keepAliveWaiter gets the answer to a renewal, or the error that ended
// the cluster's stream before it came.
type keepAliveWaiter func(*pb.LeaseKeepAliveResponse, error)

func newKeepAlives(conn grpc.ClientConnInterface) *keepAlives {
	return &keepAlives{conn: conn, ups: map[string]*keepAliveUpstream{}, refs: map[*keepAliveUpstream]int{}}
}

// upstreamID is what keep-alives must have in common to share a stream:
// the metadata passed to the cluster (token, require-leader).
func upstreamID(ctx context.Context) string {
	md, _ := metadata.FromOutgoingContext(ctx)
	var id []byte
	for _, k := range passedMetadata {
		for _, v := range md.Get(k) {
			id = append(id, k...)
			id = append(id, 0)
			id = append(id, v...)
			id = append(id, 0)
		}
	}
	return string(id)
}

// serve serves a client's LeaseKeepAlive stream until the client ends it,
// or a renewal fails as the cluster would have ended the stream.
func (k *keepAlives) serve(stream grpc.ServerStream) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	out := outgoing(ctx)
	id := upstreamID(out)
	var (
		sendMu sync.Mutex
		ended  bool // under sendMu: no more sends once the call returns
		failed = make(chan error, 1)
	)
	defer func() {
		sendMu.Lock()
		ended = true
		sendMu.Unlock()
	}()
	waiter := func(resp *pb.LeaseKeepAliveResponse, err error) {
		if err == nil {
			sendMu.Lock()
			if !ended {
				err = stream.SendMsg(resp)
			}
			sendMu.Unlock()
		}
		if err != nil {
			select {
			case failed <- err:
			default:
			}
		}
	}
	// The client's requests are read apart, so that a failed renewal ends
	// the call while the client is silent.
	received := make(chan error, 1)
	go func() {
		var current *keepAliveUpstream
		defer func() {
			if current != nil {
				k.release(current)
			}
		}()
		for {
			req := &pb.LeaseKeepAliveRequest{}
			if err := stream.RecvMsg(req); err != nil {
				received <- err
				return
			}
			if current != nil && current.isDead() {
				k.release(current)
				current = nil
			}
			if current == nil {
				current = k.acquire(out, id)
			}
			current.renew(req.ID, waiter)
		}
	}()
	select {
	case err := <-received:
		if err == io.EOF {
			return nil
		}
		return err
	case err := <-failed:
		return err
	}
}

// acquire is the live cluster stream for id, opened if need be; the caller
// releases it.
func (k *keepAlives) acquire(ctx context.Context, id string) *keepAliveUpstream {
	k.mu.Lock()
	defer k.mu.Unlock()
	up := k.ups[id]
	if up == nil || up.isDead() {
		// The stream lives as long as a client uses it, with the metadata
		// of the client that opened it but not its end.
		uctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		up = &keepAliveUpstream{k: k, id: id, ctx: uctx, cancel: cancel, waiting: map[int64][]keepAliveWaiter{}}
		k.ups[id] = up
	}
	k.refs[up]++
	return up
}

// release ends a client's use of up, and up once no client uses it.
func (k *keepAlives) release(up *keepAliveUpstream) {
	k.mu.Lock()
	k.refs[up]--
	last := k.refs[up] == 0
	if last {
		delete(k.refs, up)
		if k.ups[up.id] == up {
			delete(k.ups, up.id)
		}
	}
	k.mu.Unlock()
	if last {
		up.cancel()
	}
}

func (up *keepAliveUpstream) isDead() bool {
	up.mu.Lock()
	defer up.mu.Unlock()
	return up.dead
}

// renew asks the cluster to renew lease, unless a renewal of it is already
// on its way: w gets the answer of that one.
func (up *keepAliveUpstream) renew(lease int64, w keepAliveWaiter) {
	up.mu.Lock()
	if up.dead {
		up.mu.Unlock()
		w(nil, status.Error(codes.Unavailable, "lease keep-alive stream to the cluster ended"))
		return
	}
	inFlight := len(up.waiting[lease]) > 0
	up.waiting[lease] = append(up.waiting[lease], w)
	up.mu.Unlock()
	if inFlight {
		return
	}
	if err := up.send(lease); err != nil {
		up.fail(err)
	}
}

// send sends a renewal, opening the stream with the first one.
func (up *keepAliveUpstream) send(lease int64) error {
	up.sendMu.Lock()
	defer up.sendMu.Unlock()
	if up.stream == nil {
		desc := &grpc.StreamDesc{StreamName: "LeaseKeepAlive", ClientStreams: true, ServerStreams: true}
		s, err := up.k.conn.NewStream(up.ctx, desc, keepAliveMethod, grpc.ForceCodec(codec{}))
		if err != nil {
			return err
		}
		up.stream = s
		go up.receive(s)
	}
	return up.stream.SendMsg(&pb.LeaseKeepAliveRequest{ID: lease})
}

// receive passes the cluster's answers to the renewals that wait for them.
func (up *keepAliveUpstream) receive(s grpc.ClientStream) {
	for {
		resp := &pb.LeaseKeepAliveResponse{}
		if err := s.RecvMsg(resp); err != nil {
			if err == io.EOF {
				err = status.Error(codes.Unavailable, "lease keep-alive stream to the cluster ended")
			}
			up.fail(err)
			return
		}
		up.mu.Lock()
		waiters := up.waiting[resp.ID]
		delete(up.waiting, resp.ID)
		up.mu.Unlock()
		for _, w := range waiters {
			w(resp, nil)
		}
	}
}

// fail ends the stream after err: renewals that wait for it get err,
// which ends their clients' streams as it would have ended a direct one
// (the client's library opens a new one).
func (up *keepAliveUpstream) fail(err error) {
	up.mu.Lock()
	if up.dead {
		up.mu.Unlock()
		return
	}
	up.dead = true
	waiting := up.waiting
	up.waiting = nil
	up.mu.Unlock()
	up.cancel()
	err = statusError(up.ctx, err)
	if status.Code(err) == codes.Canceled {
		err = status.Error(codes.Unavailable, rpctypes.ErrorDesc(err))
	}
	for _, ws := range waiting {
		for _, w := range ws {
			w(nil, err)
		}
	}
}
