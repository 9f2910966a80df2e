package api

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/memberconfig"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// waitFor polls cond every few milliseconds until it holds or timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMemberThatLostItsLeader: once the two other members of three stop,
// the survivor has no leader. Its require-leader watch and keep-alive
// streams end with `etcdserver: no leader` (as etcd's do), calls that
// require a leader are refused, and a put waits for a leader until its
// client gives up.
func TestMemberThatLostItsLeader(t *testing.T) {
	ms := startInProcess(t, 3, func(cfg *memberconfig.Config) {
		cfg.HeartbeatInterval, cfg.ElectionTimeout = 20*time.Millisecond, 200*time.Millisecond
	})
	survivor := ms[0]
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{survivor.curl}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rl := clientv3.WithRequireLeader(ctx)

	if _, err := cli.Put(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	wch := cli.Watch(rl, "k", clientv3.WithRev(1))
	if wr := <-wch; wr.Err() != nil || len(wr.Events) != 1 {
		t.Fatalf("first watch response: %+v, %v", wr, wr.Err())
	}
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	kch, err := cli.KeepAlive(rl, lease.ID)
	if err != nil {
		t.Fatal(err)
	}
	<-kch

	ms[1].stop()
	ms[2].stop()
	waitFor(t, 10*time.Second, "the survivor has no leader", func() bool { return survivor.s.Leader() == 0 })

	select {
	case wr, ok := <-wch:
		if !ok || !errors.Is(wr.Err(), rpctypes.ErrNoLeader) {
			t.Errorf("watch ended with %v (open: %v), want %v", wr.Err(), ok, rpctypes.ErrNoLeader)
		}
	case <-time.After(5 * time.Second):
		t.Error("the require-leader watch was not cancelled")
	}
	// A keep-alive stream that ends closes the channel (clientv3 then
	// keeps retrying on a new stream, refused again while no leader).
	keepAliveEnded := time.After(5 * time.Second)
drain:
	for {
		select {
		case _, ok := <-kch:
			if !ok {
				break drain
			}
		case <-keepAliveEnded:
			t.Error("the require-leader keep-alive stream did not end")
			break drain
		}
	}

	// (clientv3 retries a refused read for a while, so only the put's time
	// is measured.)
	if _, err := cli.Get(rl, "k", clientv3.WithSerializable()); !errors.Is(err, rpctypes.ErrNoLeader) {
		t.Errorf("require-leader serializable get: %v, want %v", err, rpctypes.ErrNoLeader)
	}
	// A put is held for a leader, as etcd holds it, until its client gives up.
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelShort()
	if _, err := cli.Put(short, "k", "v2"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("put: %v, want the client's deadline", err)
	}
	if _, err := cli.Get(ctx, "k", clientv3.WithSerializable()); err != nil {
		t.Errorf("a serializable get needs no leader: %v", err)
	}
}
