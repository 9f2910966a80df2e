package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/client/clienttest"
)

// TestWatchDeliversEveryEventOfATransaction: the events of one revision
// share it; none may be taken for a repeat of the one before.
func TestWatchDeliversEveryEventOfATransaction(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	c := newClient(t, client.Config{Endpoints: cluster.Endpoints()})
	ctx := testContext(t)
	first := put(t, ctx, c, "t/0", "x").Header.Revision
	putOp := func(k string) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k), Value: []byte("v")}}}
	}
	if _, err := c.KV.Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{putOp("t/1"), putOp("t/2"), putOp("t/3")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KV.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("t/"), RangeEnd: []byte("t0")}); err != nil {
		t.Fatal(err)
	}
	w := c.Watch(ctx, &pb.WatchCreateRequest{Key: []byte("t/"), RangeEnd: []byte("t0"), StartRevision: first})
	var got []string
	for len(got) < 8 {
		resp, ok := <-w.Responses
		if !ok {
			t.Fatalf("watch ended after %v", got)
		}
		for _, ev := range resp.Events {
			got = append(got, fmt.Sprintf("%s %s@%d", ev.Type, ev.Kv.Key, ev.Kv.ModRevision))
		}
	}
	want := []string{
		fmt.Sprintf("PUT t/0@%d", first),
		fmt.Sprintf("PUT t/1@%d", first+1), fmt.Sprintf("PUT t/2@%d", first+1), fmt.Sprintf("PUT t/3@%d", first+1),
		fmt.Sprintf("DELETE t/0@%d", first+2), fmt.Sprintf("DELETE t/1@%d", first+2),
		fmt.Sprintf("DELETE t/2@%d", first+2), fmt.Sprintf("DELETE t/3@%d", first+2),
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("events:\n %v\nwant\n %v", got, want)
	}
}

func newSession(t *testing.T, ctx context.Context, c *client.Client, ttl int64) *client.Session {
	t.Helper()
	s, err := c.NewSession(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// lockInBackground starts m.Lock and returns the channel of its outcome.
func lockInBackground(ctx context.Context, m *client.Mutex) <-chan error {
	done := make(chan error, 1)
	go func() { done <- m.Lock(ctx) }()
	return done
}

// waitContenders waits until n keys contend under prefix.
func waitContenders(t *testing.T, ctx context.Context, c *client.Client, prefix string, n int64) {
	t.Helper()
	clienttest.Poll(t, testTimeout, fmt.Sprintf("%d contenders under %s", n, prefix), func() bool {
		resp, err := c.KV.Range(ctx, &pb.RangeRequest{Key: []byte(prefix), RangeEnd: []byte(prefix[:len(prefix)-1] + "0"), CountOnly: true})
		return err == nil && resp.Count == n
	})
}

func TestMutexHoldersTakeTurnsInOrder(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	c := newClient(t, client.Config{Endpoints: cluster.Endpoints()})
	ctx := testContext(t)

	s1 := newSession(t, ctx, c, 10)
	first := client.NewMutex(s1, "L")
	if err := first.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("L/%x", s1.Lease()); first.Key() != want {
		t.Fatalf("lock key %q, want %q", first.Key(), want)
	}
	second := client.NewMutex(newSession(t, ctx, c, 10), "L")
	secondDone := lockInBackground(ctx, second)
	waitContenders(t, ctx, c, "L/", 2)
	third := client.NewMutex(newSession(t, ctx, c, 10), "L")
	thirdDone := lockInBackground(ctx, third)
	waitContenders(t, ctx, c, "L/", 3)

	// A waiter that gives up withdraws its claim without taking the lock.
	quitter := client.NewMutex(newSession(t, ctx, c, 10), "L")
	quitCtx, quit := context.WithCancel(ctx)
	quitDone := lockInBackground(quitCtx, quitter)
	waitContenders(t, ctx, c, "L/", 4)
	quit()
	if err := <-quitDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock returned %v", err)
	}
	waitContenders(t, ctx, c, "L/", 3)

	select {
	case err := <-secondDone:
		t.Fatalf("second holder got the lock while the first held it (%v)", err)
	case err := <-thirdDone:
		t.Fatalf("third holder got the lock while the first held it (%v)", err)
	default:
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-secondDone; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-thirdDone:
		t.Fatalf("third holder got the lock while the second held it (%v)", err)
	default:
	}
	if second.Revision() >= third.Revision() {
		t.Fatalf("holders out of order: second at %d, third at %d", second.Revision(), third.Revision())
	}
	if err := second.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-thirdDone; err != nil {
		t.Fatal(err)
	}
}

func TestSessionCloseReleasesLock(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	c := newClient(t, client.Config{Endpoints: cluster.Endpoints()})
	ctx := testContext(t)
	s, err := c.NewSession(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	holder := client.NewMutex(s, "S")
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waiter := client.NewMutex(newSession(t, ctx, c, 10), "S")
	done := lockInBackground(ctx, waiter)
	waitContenders(t, ctx, c, "S/", 2)
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("closed session not done")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestMutexAgainstEtcdConcurrency: cairn's lock and etcd's own
// (go.etcd.io/etcd/client/v3/concurrency) exclude each other.
func TestMutexAgainstEtcdConcurrency(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	c := newClient(t, client.Config{Endpoints: cluster.Endpoints()})
	ctx := testContext(t)
	etcd, err := clientv3.New(clientv3.Config{Endpoints: cluster.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	es, err := concurrency.NewSession(etcd, concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()

	theirs := concurrency.NewMutex(es, "X")
	if err := theirs.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	ours := client.NewMutex(newSession(t, ctx, c, 10), "X")
	ourDone := lockInBackground(ctx, ours)
	waitContenders(t, ctx, c, "X/", 2)
	select {
	case err := <-ourDone:
		t.Fatalf("cairn took a lock etcd's client held (%v)", err)
	default:
	}
	if err := theirs.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-ourDone; err != nil {
		t.Fatal(err)
	}

	theirs2 := concurrency.NewMutex(es, "X")
	theirDone := make(chan error, 1)
	go func() { theirDone <- theirs2.Lock(ctx) }()
	waitContenders(t, ctx, c, "X/", 2)
	select {
	case err := <-theirDone:
		t.Fatalf("etcd's client took a lock cairn held (%v)", err)
	default:
	}
	if err := ours.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-theirDone; err != nil {
		t.Fatal(err)
	}
	if theirs2.Key() != fmt.Sprintf("X/%x", es.Lease()) {
		t.Fatalf("etcd's key %q", theirs2.Key())
	}
}

func TestElectionCampaignObserveResign(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	c := newClient(t, client.Config{Endpoints: cluster.Endpoints()})
	ctx := testContext(t)

	observed := c.Observe(ctx, "E")
	next := func(want string) {
		t.Helper()
		select {
		case resp, ok := <-observed:
			if !ok {
				t.Fatal("observation ended")
			}
			if got := string(resp.Kvs[0].Value); got != want {
				t.Fatalf("observed leader value %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no leader %q observed", want)
		}
	}
	if _, err := c.Leader(ctx, "E"); !errors.Is(err, client.ErrNoLeader) {
		t.Fatalf("leader of an empty election: %v", err)
	}

	a := client.NewElection(newSession(t, ctx, c, 10), "E")
	if err := a.Campaign(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	next("a")
	b := client.NewElection(newSession(t, ctx, c, 10), "E")
	bDone := make(chan error, 1)
	go func() { bDone <- b.Campaign(ctx, "b") }()
	waitContenders(t, ctx, c, "E/", 2)
	if err := a.Proclaim(ctx, "a2"); err != nil {
		t.Fatal(err)
	}
	next("a2")
	leader, err := c.Leader(ctx, "E")
	if err != nil || string(leader.Kvs[0].Key) != a.Key() {
		t.Fatalf("leader %v (%v), want %s", leader, err, a.Key())
	}
	select {
	case err := <-bDone:
		t.Fatalf("b elected while a leads (%v)", err)
	default:
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	next("b")
	if err := a.Proclaim(ctx, "late"); !errors.Is(err, client.ErrNotLeader) {
		t.Fatalf("proclaim after resigning: %v", err)
	}
}
