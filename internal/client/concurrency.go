package client

import (
	"context"
	"errors"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// The recipes of this file are etcd's distributed lock and leader election,
// on the same keys and with the same protocol as etcd's clients, so that
// cairn and etcdctl (or any program using etcd's concurrency package) can
// contend for the same lock or election:
//
//   - A session is a lease kept alive; whatever a session holds disappears
//     with its lease when the holder dies.
//   - Under a prefix, each contender owns the key prefix + "/" + its lease
//     ID in hexadecimal, attached to its lease. The contender whose key has
//     the lowest create revision holds the lock (or leads).
//   - A contender waits for the deletion of the key created just before its
//     own, and then of any other earlier one, never for the holder alone, so
//     that a release wakes one waiter and not the whole herd.

// ErrSessionExpired is returned when the lease of a session ended before
// the lock or leadership it waited for was obtained.
var ErrSessionExpired = errors.New("session expired")

// ErrNoLeader is returned by Election.Leader when nobody campaigns.
var ErrNoLeader = errors.New("election: no leader")

// ErrNotLeader is returned by Proclaim when the election was lost.
var ErrNotLeader = errors.New("election: not leader")

// DefaultSessionTTL is the TTL of a session's lease, in seconds, unless
// said otherwise.
const DefaultSessionTTL = 60

// Session is a lease kept alive until Close, or until it cannot be renewed.
type Session struct {
	c      *Client
	id     int64
	cancel context.CancelFunc
	done   chan struct{}
}

// NewSession grants a lease of ttl seconds (DefaultSessionTTL if ttl <= 0)
// and keeps it alive in the background.
func (c *Client) NewSession(ctx context.Context, ttl int64) (*Session, error) {
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	grant, err := c.Lease.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: ttl})
	if err != nil {
		return nil, err
	}
	keepCtx, cancel := context.WithCancel(context.Background())
	s := &Session{c: c, id: grant.GetID(), cancel: cancel, done: make(chan struct{})}
	renewals := c.KeepAlive(keepCtx, s.id)
	go func() {
		defer close(s.done)
		for range renewals {
		}
	}()
	return s, nil
}

// Lease is the ID of the session's lease.
func (s *Session) Lease() int64 { return s.id }

// Done is closed when the session ends: closed, or its lease lost.
func (s *Session) Done() <-chan struct{} { return s.done }

// Close stops keeping the lease alive and revokes it, which deletes every
// key attached to it (released locks, resigned elections).
func (s *Session) Close(ctx context.Context) error {
	s.cancel()
	<-s.done
	_, err := s.c.Lease.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: s.id})
	return err
}

// contenderKey is the key a session owns under prefix.
func contenderKey(prefix string, lease int64) string {
	return fmt.Sprintf("%s%x", prefix, lease)
}

// withSlash ends a lock or election name with "/", as etcd's recipes do.
func withSlash(name string) string { return name + "/" }

// firstCreated is the request for the key of prefix with the lowest create
// revision: the holder of the lock, or the leader.
func firstCreated(prefix string) *pb.RangeRequest {
	return &pb.RangeRequest{Key: []byte(prefix), RangeEnd: prefixRangeEnd(prefix), Limit: 1,
		SortOrder: pb.RangeRequest_ASCEND, SortTarget: pb.RangeRequest_CREATE}
}

// prefixRangeEnd is the end of the range of the keys starting with prefix.
func prefixRangeEnd(prefix string) []byte {
	end := []byte(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0}
}

// claim creates key with value on the session's lease unless the session
// already owns it, in one transaction that also reads the first key of
// prefix. It returns the create revision of key, its kv if it existed, and
// the current owner (kv of the first key; nil if none).
func (s *Session) claim(ctx context.Context, prefix, key, value string) (created int64, existing *mvccpb.KeyValue, owner *mvccpb.KeyValue, err error) {
	getOwner := &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: firstCreated(prefix)}}
	resp, err := s.c.KV.Txn(ctx, &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: []byte(key), Target: pb.Compare_CREATE, Result: pb.Compare_EQUAL,
			TargetUnion: &pb.Compare_CreateRevision{CreateRevision: 0}}},
		Success: []*pb.RequestOp{
			{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key), Value: []byte(value), Lease: s.id}}},
			getOwner,
		},
		Failure: []*pb.RequestOp{
			{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte(key)}}},
			getOwner,
		},
	})
	if err != nil {
		return 0, nil, nil, err
	}
	created = resp.GetHeader().GetRevision()
	if !resp.GetSucceeded() {
		kvs := resp.GetResponses()[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			return 0, nil, nil, fmt.Errorf("key %q vanished while being claimed", key)
		}
		existing = kvs[0]
		created = existing.GetCreateRevision()
	}
	if kvs := resp.GetResponses()[1].GetResponseRange().GetKvs(); len(kvs) > 0 {
		owner = kvs[0]
	}
	return created, existing, owner, nil
}

// waitPredecessors waits until no key of prefix created at or before
// maxCreate is left: each time for the deletion of the latest of them.
func (c *Client) waitPredecessors(ctx context.Context, prefix string, maxCreate int64) error {
	for {
		resp, err := c.KV.Range(ctx, &pb.RangeRequest{Key: []byte(prefix), RangeEnd: prefixRangeEnd(prefix), Limit: 1,
			MaxCreateRevision: maxCreate, SortOrder: pb.RangeRequest_DESCEND, SortTarget: pb.RangeRequest_CREATE})
		if err != nil {
			return err
		}
		if len(resp.GetKvs()) == 0 {
			return nil
		}
		if err := c.waitDeleted(ctx, resp.GetKvs()[0].GetKey(), resp.GetHeader().GetRevision()); err != nil {
			return err
		}
	}
}

// waitDeleted waits until key is deleted at a revision after rev.
func (c *Client) waitDeleted(ctx context.Context, key []byte, rev int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := c.Watch(wctx, &pb.WatchCreateRequest{Key: key, StartRevision: rev + 1,
		Filters: []pb.WatchCreateRequest_FilterType{pb.WatchCreateRequest_NOPUT}})
	for resp := range w.Responses {
		if resp.Err != nil {
			return resp.Err
		}
		for _, ev := range resp.Events {
			if ev.GetType() == mvccpb.DELETE {
				return nil
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("watch on %q ended", key)
}

// stillOwned checks after a wait that the session's key survived it.
func (s *Session) stillOwned(ctx context.Context, key string) error {
	resp, err := s.c.KV.Range(ctx, &pb.RangeRequest{Key: []byte(key), CountOnly: true})
	if err != nil {
		return err
	}
	if resp.GetCount() == 0 {
		return ErrSessionExpired
	}
	return nil
}

// release deletes key with a context of its own: used when giving up a
// wait whose context ended.
func (s *Session) release(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultKeepAliveTimeout)
	defer cancel()
	_, _ = s.c.KV.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte(key)})
}

// contender is a session's claim under the prefix of a lock or an
// election.
type contender struct {
	s      *Session
	prefix string
	key    string // the session's key under prefix
	rev    int64  // its create revision
}

func newContender(s *Session, name string) contender {
	return contender{s: s, prefix: withSlash(name)}
}

// waitEarlier waits until no key of the prefix created before the
// contender's is left. The claim is withdrawn if the wait fails.
func (c *contender) waitEarlier(ctx context.Context) error {
	if err := c.s.c.waitPredecessors(ctx, c.prefix, c.rev-1); err != nil {
		c.s.release(c.key)
		return err
	}
	return nil
}

// Mutex is a distributed lock named by a key prefix.
type Mutex struct{ contender }

// NewMutex returns the lock called name for session s; its contenders'
// keys are under name + "/".
func NewMutex(s *Session, name string) *Mutex {
	return &Mutex{newContender(s, name)}
}

// Lock waits until the session holds the lock, or ctx ends (the claim is
// then withdrawn), or the session ends (ErrSessionExpired).
func (m *Mutex) Lock(ctx context.Context) error {
	m.key = contenderKey(m.prefix, m.s.Lease())
	rev, _, owner, err := m.s.claim(ctx, m.prefix, m.key, "")
	if err != nil {
		return err
	}
	m.rev = rev
	if owner == nil || owner.GetCreateRevision() == rev {
		return nil
	}
	if err := m.waitEarlier(ctx); err != nil {
		return err
	}
	return m.s.stillOwned(ctx, m.key)
}

// Unlock releases the lock.
func (m *Mutex) Unlock(ctx context.Context) error {
	_, err := m.s.c.KV.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte(m.key)})
	return err
}

// Key is the key that holds the lock: name/<lease ID in hexadecimal>.
func (m *Mutex) Key() string { return m.key }

// Revision is the create revision of the lock's key.
func (m *Mutex) Revision() int64 { return m.rev }

// Election is a leader election named by a key prefix. Its key is empty
// while the session is not a candidate.
type Election struct{ contender }

// NewElection returns the election called name for session s; its
// candidates' keys are under name + "/".
func NewElection(s *Session, name string) *Election {
	return &Election{newContender(s, name)}
}

// Campaign waits until the session leads the election with value, or ctx
// ends (the candidacy is then withdrawn), or the session ends.
func (e *Election) Campaign(ctx context.Context, value string) error {
	key := contenderKey(e.prefix, e.s.Lease())
	rev, existing, _, err := e.s.claim(ctx, e.prefix, key, value)
	if err != nil {
		return err
	}
	e.key, e.rev = key, rev
	if existing != nil && string(existing.GetValue()) != value {
		if err := e.Proclaim(ctx, value); err != nil {
			e.s.release(key)
			e.key = ""
			return err
		}
	}
	if err := e.waitEarlier(ctx); err != nil {
		e.key = ""
		return err
	}
	return e.s.stillOwned(ctx, key)
}

// Proclaim changes the leader's value without a new election.
func (e *Election) Proclaim(ctx context.Context, value string) error {
	if e.key == "" {
		return ErrNotLeader
	}
	resp, err := e.ifStillCandidate(ctx, &pb.RequestOp{Request: &pb.RequestOp_RequestPut{
		RequestPut: &pb.PutRequest{Key: []byte(e.key), Value: []byte(value), Lease: e.s.Lease()}}})
	if err != nil {
		return err
	}
	if !resp.GetSucceeded() {
		e.key = ""
		return ErrNotLeader
	}
	return nil
}

// Resign gives up leadership (or candidacy) so that the next candidate
// leads.
func (e *Election) Resign(ctx context.Context) error {
	if e.key == "" {
		return nil
	}
	_, err := e.ifStillCandidate(ctx, &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{
		RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte(e.key)}}})
	if err == nil {
		e.key = ""
	}
	return err
}

// ifStillCandidate runs op in a transaction if the session's key is still
// the one its candidacy created (same create revision), not one deleted
// since and created again.
func (e *Election) ifStillCandidate(ctx context.Context, op *pb.RequestOp) (*pb.TxnResponse, error) {
	return e.s.c.KV.Txn(ctx, &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: []byte(e.key), Target: pb.Compare_CREATE, Result: pb.Compare_EQUAL,
			TargetUnion: &pb.Compare_CreateRevision{CreateRevision: e.rev}}},
		Success: []*pb.RequestOp{op},
	})
}

// Key is the key of the session's candidacy: name/<lease ID in hexadecimal>.
func (e *Election) Key() string { return e.key }

// Leader returns the current leader's key, as a range response of one key.
func (c *Client) Leader(ctx context.Context, name string) (*pb.RangeResponse, error) {
	resp, err := c.KV.Range(ctx, firstCreated(withSlash(name)))
	if err != nil {
		return nil, err
	}
	if len(resp.GetKvs()) == 0 {
		return nil, ErrNoLeader
	}
	return resp, nil
}

// Observe reports the leader of the election called name, and each change
// of leader or of the leader's value, as range responses of one key, until
// ctx ends or the watch fails; the channel is then closed. It needs no
// session: observers take no part in the election.
func (c *Client) Observe(ctx context.Context, name string) <-chan *pb.RangeResponse {
	out := make(chan *pb.RangeResponse)
	go func() {
		defer close(out)
		prefix := withSlash(name)
		for ctx.Err() == nil {
			leader, err := c.awaitLeader(ctx, prefix)
			if err != nil {
				return
			}
			if !c.followLeader(ctx, leader, out) {
				return
			}
		}
	}()
	return out
}

// awaitLeader returns the current leader, waiting for a first candidate if
// there is none.
func (c *Client) awaitLeader(ctx context.Context, prefix string) (*pb.RangeResponse, error) {
	for {
		resp, err := c.KV.Range(ctx, firstCreated(prefix))
		if err != nil {
			return nil, err
		}
		if len(resp.GetKvs()) > 0 {
			return resp, nil
		}
		// Wait for a candidate to appear after this read, then read again:
		// the first to appear is not necessarily the first created.
		if err := c.waitCreated(ctx, prefix, resp.GetHeader().GetRevision()); err != nil {
			return nil, err
		}
	}
}

// waitCreated waits for a put under prefix after revision rev.
func (c *Client) waitCreated(ctx context.Context, prefix string, rev int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := c.Watch(wctx, &pb.WatchCreateRequest{Key: []byte(prefix), RangeEnd: prefixRangeEnd(prefix),
		StartRevision: rev + 1, Filters: []pb.WatchCreateRequest_FilterType{pb.WatchCreateRequest_NODELETE}})
	for resp := range w.Responses {
		if resp.Err != nil {
			return resp.Err
		}
		if len(resp.Events) > 0 {
			return nil
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("watch on the election ended")
}

// followLeader reports leader, then each new value of its key, until the
// key is deleted (true: look for the next leader) or ctx ends (false).
func (c *Client) followLeader(ctx context.Context, leader *pb.RangeResponse, out chan<- *pb.RangeResponse) bool {
	send := func(r *pb.RangeResponse) bool {
		select {
		case out <- r:
			return true
		case <-ctx.Done():
			return false
		}
	}
	// Reported as etcd's clients report leaders: the header and the key,
	// without the range's count.
	if !send(&pb.RangeResponse{Header: leader.GetHeader(), Kvs: leader.GetKvs()[:1]}) {
		return false
	}
	kv := leader.GetKvs()[0]
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := c.Watch(wctx, &pb.WatchCreateRequest{Key: kv.GetKey(), StartRevision: leader.GetHeader().GetRevision() + 1})
	for resp := range w.Responses {
		if resp.Err != nil {
			return ctx.Err() == nil
		}
		for _, ev := range resp.Events {
			if ev.GetType() == mvccpb.DELETE {
				return true
			}
			if ev.GetKv().GetCreateRevision() != kv.GetCreateRevision() {
				return true // deleted and created again: a new candidacy
			}
			next := &pb.RangeResponse{Header: resp.Header, Kvs: []*mvccpb.KeyValue{ev.GetKv()}}
			if !send(next) {
				return false
			}
		}
	}
	return ctx.Err() == nil
}
