package grpcproxy

import (
	"context"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// nowReads are the reads that create a watcher (the permission check over
// the watched range and the cluster's revision, see watchStream.create).
// Watchers created together on the same keys with the same token share
// one: a thousand clients that watch the same prefix after a restart cost
// the cluster a few reads, not a thousand.
type nowReads struct {
	p *Proxy

	mu       sync.Mutex
	inFlight map[nowReadKey]*nowRead
}

type nowReadKey struct{ upstream, key, end string }

type nowRead struct {
	done chan struct{}
	resp *pb.RangeResponse
	err  error
}

// nowReadTimeout bounds a shared read, which no one watcher's end cancels.
const nowReadTimeout = 10 * time.Second

// read reads [key, end) with ctx's token (limit 1, keys only,
// serializable), or waits for the same read already on its way.
func (r *nowReads) read(ctx context.Context, key, end []byte) (*pb.RangeResponse, error) {
	k := nowReadKey{upstream: upstreamID(ctx), key: string(key), end: string(end)}
	r.mu.Lock()
	call, joined := r.inFlight[k]
	if !joined {
		call = &nowRead{done: make(chan struct{})}
		r.inFlight[k] = call
	}
	r.mu.Unlock()
	if !joined {
		go func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), nowReadTimeout)
			defer cancel()
			call.resp, call.err = r.p.client.KV.Range(rctx, &pb.RangeRequest{Key: key, RangeEnd: end, Limit: 1, KeysOnly: true, Serializable: true})
			r.mu.Lock()
			delete(r.inFlight, k)
			r.mu.Unlock()
			close(call.done)
		}()
	}
	select {
	case <-call.done:
		return call.resp, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
