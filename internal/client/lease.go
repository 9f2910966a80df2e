package client

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/metadata"
)

// requireLeader asks the member serving a stream opened with the returned
// context to end it when it loses its leader, so that its owner moves to a
// member that has one.
func requireLeader(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, rpctypes.MetadataRequireLeaderKey, rpctypes.MetadataHasLeader)
}

// minKeepAliveInterval bounds how often a lease is renewed, whatever its TTL.
const minKeepAliveInterval = 500 * time.Millisecond

// KeepAliveOnce renews lease id once, retrying on another member if the one
// asked is lost. A lease that does not exist (any more) gives
// rpctypes.ErrLeaseNotFound.
func (c *Client) KeepAliveOnce(ctx context.Context, id int64) (*pb.LeaseKeepAliveResponse, error) {
	for attempt := 0; ; attempt++ {
		resp, err := c.renew(ctx, id)
		if err == nil {
			if resp.GetTTL() <= 0 {
				return nil, rpctypes.ErrLeaseNotFound
			}
			return resp, nil
		}
		if ctx.Err() != nil || !isResumable(err) {
			return nil, toError(ctx, err)
		}
		if err := sleep(ctx, retryDelay(attempt)); err != nil {
			return nil, err
		}
	}
}

// renew sends one keep-alive on a stream of its own.
func (c *Client) renew(ctx context.Context, id int64) (*pb.LeaseKeepAliveResponse, error) {
	streamCtx, cancel := context.WithCancel(requireLeader(ctx))
	defer cancel()
	s, err := c.Lease.LeaseKeepAlive(streamCtx)
	if err != nil {
		return nil, err
	}
	if err := s.Send(&pb.LeaseKeepAliveRequest{ID: id}); err != nil {
		return nil, err
	}
	return s.Recv()
}

// keepAliveBuffer is how many renewals wait for a slow reader of KeepAlive's
// channel before new ones are dropped.
const keepAliveBuffer = 16

// KeepAlive renews lease id at a third of its TTL until ctx is done or the
// lease is gone, and reports each renewal on the returned channel, which is
// closed at the end. Renewals never wait for the reader: those it has no
// room for are dropped. When the member renewing the lease is lost, or
// loses its leader (the stream requires one), renewals go on through
// another.
func (c *Client) KeepAlive(ctx context.Context, id int64) <-chan *pb.LeaseKeepAliveResponse {
	out := make(chan *pb.LeaseKeepAliveResponse, keepAliveBuffer)
	go func() {
		defer close(out)
		for attempt := 0; ; attempt++ {
			renewed, err := c.keepAliveStream(ctx, id, out)
			if err == nil || ctx.Err() != nil || !isResumable(err) {
				c.cfg.Logger.Debug("lease keep-alive ended", "lease", id, "error", err)
				return
			}
			if renewed {
				attempt = 0
			}
			c.cfg.Logger.Debug("resuming lease keep-alive", "lease", id, "error", err)
			if sleep(ctx, retryDelay(attempt)) != nil {
				return
			}
		}
	}()
	return out
}

// keepAliveStream renews the lease on one stream until the stream fails
// (err set), or the lease is gone or ctx done (err nil). renewed says
// whether at least one renewal went through.
func (c *Client) keepAliveStream(ctx context.Context, id int64, out chan<- *pb.LeaseKeepAliveResponse) (renewed bool, err error) {
	streamCtx, cancel := context.WithCancel(requireLeader(ctx))
	defer cancel()
	s, err := c.Lease.LeaseKeepAlive(streamCtx)
	if err != nil {
		return false, err
	}
	for {
		if err := s.Send(&pb.LeaseKeepAliveRequest{ID: id}); err != nil {
			return renewed, err
		}
		resp, err := s.Recv()
		if err != nil {
			return renewed, err
		}
		if resp.GetTTL() <= 0 {
			return renewed, nil
		}
		renewed = true
		select {
		case out <- resp:
		default:
		}
		wait := max(time.Duration(resp.GetTTL())*time.Second/3, minKeepAliveInterval)
		if sleep(ctx, wait) != nil {
			return renewed, nil
		}
	}
}
