package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/internal/api/electionpb"
	"github.com/cairnkv/cairn/internal/api/lockpb"
	"github.com/cairnkv/cairn/internal/memberconfig"
)

// wantEtcdError checks that err is etcd's answer: code Unknown and msg.
func wantEtcdError(t *testing.T, what string, err error, msg string) {
	t.Helper()
	if s, _ := status.FromError(err); err == nil || s.Code() != codes.Unknown || s.Message() != msg {
		t.Errorf("%s: %v, want code Unknown and %q", what, err, msg)
	}
}

// notDone fails the test if ch yields within a moment: a call that must wait.
func notDone[T any](t *testing.T, what string, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s did not wait: %v", what, v)
	case <-time.After(300 * time.Millisecond):
	}
}

// answer is what a call that may wait answered.
type answer[T any] struct {
	resp T
	err  error
}

// async makes call in the background; its answer comes on the channel.
func async[T any](call func() (T, error)) <-chan answer[T] {
	ch := make(chan answer[T], 1)
	go func() {
		resp, err := call()
		ch <- answer[T]{resp, err}
	}()
	return ch
}

func TestElectionService(t *testing.T) {
	_, _, cli := startMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ec := electionpb.NewElectionClient(cli.ActiveConnection())
	name := []byte("/election")

	_, err := ec.Leader(ctx, &electionpb.LeaderRequest{Name: name})
	wantEtcdError(t, "leader of nobody", err, "election: no leader")
	_, err = ec.Proclaim(ctx, &electionpb.ProclaimRequest{Value: []byte("v")})
	wantEtcdError(t, "proclaim without a leader key", err, `"leader" field must be provided`)
	_, err = ec.Resign(ctx, &electionpb.ResignRequest{})
	wantEtcdError(t, "resign without a leader key", err, `"leader" field must be provided`)

	obs, err := ec.Observe(ctx, &electionpb.LeaderRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	observed := func(want string) {
		t.Helper()
		resp, err := obs.Recv()
		if err != nil || string(resp.Kv.Value) != want {
			t.Fatalf("observed %v %v, want the value %q", resp, err, want)
		}
	}

	// A campaign without a lease gets one of 60 s, not kept alive.
	a, err := ec.Campaign(ctx, &electionpb.CampaignRequest{Name: name, Value: []byte("a")})
	if err != nil {
		t.Fatal(err)
	}
	la := a.Leader
	if want := fmt.Sprintf("/election/%x", la.Lease); string(la.Key) != want || la.Rev != a.Header.Revision {
		t.Errorf("leader key %q at %d, want %q at %d", la.Key, la.Rev, want, a.Header.Revision)
	}
	if ttl, err := cli.TimeToLive(ctx, clientv3.LeaseID(la.Lease)); err != nil || ttl.GrantedTTL != 60 {
		t.Errorf("lease of the campaign: %v %v", ttl, err)
	}
	observed("a")

	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	bc := async(func() (*electionpb.CampaignResponse, error) {
		return ec.Campaign(ctx, &electionpb.CampaignRequest{Name: name, Lease: int64(lease.ID), Value: []byte("b")})
	})
	notDone(t, "a second campaign", bc)

	if _, err := ec.Proclaim(ctx, &electionpb.ProclaimRequest{Leader: la, Value: []byte("a2")}); err != nil {
		t.Fatal(err)
	}
	observed("a2")
	if l, err := ec.Leader(ctx, &electionpb.LeaderRequest{Name: name}); err != nil || string(l.Kv.Value) != "a2" || string(l.Kv.Key) != string(la.Key) {
		t.Errorf("leader: %v %v", l, err)
	}

	if _, err := ec.Resign(ctx, &electionpb.ResignRequest{Leader: la}); err != nil {
		t.Fatal(err)
	}
	b := <-bc
	if b.err != nil || b.resp.Leader.Lease != int64(lease.ID) {
		t.Fatalf("second campaign after the resignation: %v %v", b.resp, b.err)
	}
	observed("b")
	_, err = ec.Proclaim(ctx, &electionpb.ProclaimRequest{Leader: la, Value: []byte("x")})
	wantEtcdError(t, "proclaim of a resigned leader", err, "election: not leader")

	// A campaign given up while it waits withdraws its candidacy.
	cctx, ccancel := context.WithCancel(ctx)
	cc := async(func() (*electionpb.CampaignResponse, error) {
		return ec.Campaign(cctx, &electionpb.CampaignRequest{Name: name, Value: []byte("c")})
	})
	notDone(t, "a third campaign", cc)
	ccancel()
	<-cc
	waitFor(t, 5*time.Second, "the withdrawn candidacy's key to go", func() bool {
		resp, err := cli.Get(ctx, "/election/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 1
	})
}

// TestLockService: the Lock service contends on the same keys as etcd's
// clients (concurrency.Mutex).
func TestLockService(t *testing.T) {
	_, _, cli := startMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lc := lockpb.NewLockClient(cli.ActiveConnection())

	_, err := lc.Lock(ctx, &lockpb.LockRequest{Name: []byte("l"), Lease: 12345})
	wantEtcdError(t, "lock on a missing lease", err, "etcdserver: requested lease not found")
	_, err = lc.Unlock(ctx, &lockpb.UnlockRequest{})
	wantEtcdError(t, "unlock without a key", err, "etcdserver: key is not provided")

	a, err := lc.Lock(ctx, &lockpb.LockRequest{Name: []byte("l")})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := concurrency.NewSession(cli)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	m := concurrency.NewMutex(sess, "l")
	if err := m.TryLock(ctx); err != concurrency.ErrLocked {
		t.Fatalf("etcd's mutex while the service holds the lock: %v", err)
	}

	bc := async(func() (*lockpb.LockResponse, error) {
		return lc.Lock(ctx, &lockpb.LockRequest{Name: []byte("l"), Lease: int64(sess.Lease())})
	})
	notDone(t, "a second lock", bc)
	if _, err := lc.Unlock(ctx, &lockpb.UnlockRequest{Key: a.Key}); err != nil {
		t.Fatal(err)
	}
	b := <-bc
	if want := fmt.Sprintf("l/%x", sess.Lease()); b.err != nil || string(b.resp.Key) != want {
		t.Fatalf("second lock after the unlock: %v %v, want the key %q", b.resp, b.err, want)
	}
	// Taken with the session's lease, the lock is the session's mutex's.
	if err := m.Lock(ctx); err != nil || m.Key() != string(b.resp.Key) {
		t.Fatalf("etcd's mutex of the session: %v, key %q", err, m.Key())
	}
}

// TestRecipesRunAsTheCaller: with authentication on, the services read and
// write as the caller, and grant no lease to an anonymous one.
func TestRecipesRunAsTheCaller(t *testing.T) {
	m := newMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	setUpAuth(t, ctx, m.client("", ""))
	root, alice := m.client("root", "rootpw"), m.client("alice", "alicepw")

	anonymous := electionpb.NewElectionClient(m.conn())
	_, err := anonymous.Campaign(ctx, &electionpb.CampaignRequest{Name: []byte("/app/e")})
	wantEtcdError(t, "anonymous campaign", err, "etcdserver: user name is empty")
	_, err = lockpb.NewLockClient(m.conn()).Lock(ctx, &lockpb.LockRequest{Name: []byte("/app/l")})
	wantEtcdError(t, "anonymous lock", err, "etcdserver: user name is empty")
	if leases, err := root.Leases(ctx); err != nil || len(leases.Leases) != 0 {
		t.Errorf("leases after anonymous calls: %v %v", leases, err)
	}

	ae := electionpb.NewElectionClient(alice.ActiveConnection())
	_, err = ae.Leader(ctx, &electionpb.LeaderRequest{Name: []byte("/app/e")})
	wantEtcdError(t, "alice: leader under /app/", err, "election: no leader")
	_, err = ae.Leader(ctx, &electionpb.LeaderRequest{Name: []byte("secret")})
	wantEtcdError(t, "alice: leader of secret", err, "etcdserver: permission denied")
	_, err = lockpb.NewLockClient(alice.ActiveConnection()).Lock(ctx, &lockpb.LockRequest{Name: []byte("/app/l")})
	wantEtcdError(t, "alice: lock under /app/ (read only)", err, "etcdserver: permission denied")

	if _, err := lockpb.NewLockClient(root.ActiveConnection()).Lock(ctx, &lockpb.LockRequest{Name: []byte("/app/l")}); err != nil {
		t.Errorf("root: lock: %v", err)
	}
}

// TestLockWhoseLeaseExpiresWhileWaiting: a lock whose lease (and so key)
// goes while it waits is refused when its turn comes, in etcd's words.
func TestLockWhoseLeaseExpiresWhileWaiting(t *testing.T) {
	_, _, cli := startMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lc := lockpb.NewLockClient(cli.ActiveConnection())
	a, err := lc.Lock(ctx, &lockpb.LockRequest{Name: []byte("l")})
	if err != nil {
		t.Fatal(err)
	}
	short, err := cli.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	bc := async(func() (*lockpb.LockResponse, error) {
		return lc.Lock(ctx, &lockpb.LockRequest{Name: []byte("l"), Lease: int64(short.ID)})
	})
	waitFor(t, 10*time.Second, "the waiting lock's lease to expire", func() bool {
		ttl, err := cli.TimeToLive(ctx, short.ID)
		return err == nil && ttl.TTL == -1
	})
	notDone(t, "the lock whose lease expired", bc)
	if _, err := lc.Unlock(ctx, &lockpb.UnlockRequest{Key: a.Key}); err != nil {
		t.Fatal(err)
	}
	b := <-bc
	wantEtcdError(t, "the lock whose lease expired", b.err, "mutex: session is expired")
}
