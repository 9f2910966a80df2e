package api

import (
	"context"
	"errors"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/api/lockpb"
)

// errLockSessionExpired answers a lock whose key went (its lease expired)
// while it waited, in etcd's words.
var errLockSessionExpired = errors.New("mutex: session is expired")

// lockServer is etcd's Lock service (recipes.go).
type lockServer struct {
	lockpb.UnimplementedLockServer
	r recipes
}

// Lock waits until the caller holds the lock, or ctx ends (the claim is
// then withdrawn), and answers the key that holds it.
func (l *lockServer) Lock(ctx context.Context, req *lockpb.LockRequest) (*lockpb.LockResponse, error) {
	lease, err := l.r.leaseOf(ctx, req.Lease)
	if err != nil {
		return nil, asEtcds(err)
	}
	c := contendersOf(req.Name)
	key := c.key(lease)
	rev, _, _, err := l.r.claim(ctx, key, nil, lease)
	if err != nil {
		return nil, asEtcds(err)
	}
	if err := l.r.waitEarlier(ctx, c, rev-1); err != nil {
		l.r.release(ctx, key)
		return nil, asEtcds(err)
	}
	// The key may have gone with its lease during the wait.
	resp, err := l.r.kv.Range(ctx, &pb.RangeRequest{Key: key, CountOnly: true})
	if err != nil {
		return nil, asEtcds(err)
	}
	if resp.Count == 0 {
		return nil, errLockSessionExpired
	}
	return &lockpb.LockResponse{Header: resp.Header, Key: key}, nil
}

// Unlock deletes the key of a lock.
func (l *lockServer) Unlock(ctx context.Context, req *lockpb.UnlockRequest) (*lockpb.UnlockResponse, error) {
	resp, err := l.r.kv.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: req.Key})
	if err != nil {
		return nil, asEtcds(err)
	}
	return &lockpb.UnlockResponse{Header: resp.Header}, nil
}
