package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestSingleMember(t *testing.T) {
	ms := newCluster(t, 1, clusterOptions{})
	cli := client(t, ms...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wch := cli.Watch(ctx, "k", clientv3.WithPrefix())
	if _, err := cli.Put(ctx, "k1", "v1"); err != nil {
		t.Fatal(err)
	}
	txn, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.Version("k1"), "=", 1)).Then(clientv3.OpPut("k2", "v2")).Commit()
	if err != nil || !txn.Succeeded {
		t.Fatalf("txn: %v %v", txn, err)
	}
	var seen []string
	for len(seen) < 2 {
		for _, ev := range (<-wch).Events {
			seen = append(seen, string(ev.Kv.Key))
		}
	}
	if fmt.Sprint(seen) != "[k1 k2]" {
		t.Errorf("watch saw %v", seen)
	}
	lease, err := cli.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	cli.Put(ctx, "leased", "v", clientv3.WithLease(lease.ID))
	kctx, kcancel := context.WithCancel(ctx)
	kach, err := cli.KeepAlive(kctx, lease.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Kept alive well past its TTL, the lease's key stays.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, ok := <-kach; !ok {
			t.Fatal("keep-alive channel closed")
		}
	}
	if g, _ := cli.Get(ctx, "leased"); len(g.Kvs) != 1 {
		t.Fatal("key of a kept-alive lease is gone")
	}
	kcancel()
	// Without keep-alives it expires and takes its key along.
	for {
		g, err := cli.Get(ctx, "leased")
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Kvs) == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the lease never expired")
		}
		time.Sleep(100 * time.Millisecond)
	}
	ml, err := cli.MemberList(ctx)
	if err != nil || len(ml.Members) != 1 || ml.Members[0].Name != "m1" {
		t.Fatalf("member list: %v %v", ml, err)
	}
	// A clean stop and a restart keep the data.
	ms[0].stop()
	ms[0].start()
	waitHealthy(t, ms...)
	if g, err := client(t, ms...).Get(ctx, "k", clientv3.WithPrefix()); err != nil || len(g.Kvs) != 2 {
		t.Fatalf("after restart: %v %v", g, err)
	}
}

// writer puts sequential keys until stopped and remembers which the
// cluster acknowledged.
type writer struct {
	mu    sync.Mutex
	acked []string
	stop  chan struct{}
	done  chan struct{}
}

func startWriter(cli *clientv3.Client, prefix string) *writer {
	w := &writer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			key := fmt.Sprintf("%s%06d", prefix, i)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := cli.Put(ctx, key, "v")
			cancel()
			if err == nil {
				w.mu.Lock()
				w.acked = append(w.acked, key)
				w.mu.Unlock()
			}
		}
	}()
	return w
}

func (w *writer) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkAcked asserts every acknowledged key is on member m.
func checkAcked(t *testing.T, m *member, w *writer, prefix string) {
	t.Helper()
	cli := client(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithSerializable())
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, kv := range resp.Kvs {
		have[string(kv.Key)] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range w.acked {
		if !have[k] {
			t.Fatalf("%s lost the acknowledged write %s (%d acknowledged, %d present)", m.name, k, len(w.acked), len(have))
		}
	}
}

func TestLeaderKillFailoverAndCatchUp(t *testing.T) {
	ms := newCluster(t, 3, clusterOptions{})
	cli := client(t, ms...)
	w := startWriter(cli, "acked/")
	waitFor(t, 10*time.Second, "first writes", func() bool { return w.count() > 100 })
	old, rest := leaderAndRest(t, ms)
	before := w.count()
	old.kill()
	killedAt := time.Now()
	waitFor(t, 10*time.Second, "a new leader and successful writes after killing the leader", func() bool {
		return leader(t, rest) != nil && w.count() > before+50
	})
	t.Logf("new leader and 50 more writes %v after kill -9 of the leader", time.Since(killedAt).Round(time.Millisecond))
	close(w.stop)
	<-w.done
	old.start()
	waitHealthy(t, old)
	oldc := client(t, old)
	waitFor(t, 20*time.Second, "the restarted member to catch up", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := oldc.Get(ctx, "acked/", clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithSerializable())
		return err == nil && resp.Count >= int64(w.count())
	})
	for _, m := range ms {
		checkAcked(t, m, w, "acked/")
	}
}

func TestAcknowledgedWritesSurviveKill(t *testing.T) {
	ms := newCluster(t, 1, clusterOptions{})
	w := startWriter(client(t, ms...), "durable/")
	waitFor(t, 10*time.Second, "writes", func() bool { return w.count() > 300 })
	ms[0].kill()
	close(w.stop)
	<-w.done
	ms[0].start()
	waitHealthy(t, ms...)
	checkAcked(t, ms[0], w, "durable/")
}

func TestLearnerPromotion(t *testing.T) {
	ms := newCluster(t, 3, clusterOptions{})
	cli := client(t, ms...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 300; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("pre/%04d", i), strings.Repeat("x", 100)); err != nil {
			t.Fatal(err)
		}
	}
	l, id := addLearner(ctx, t, cli, ms, clusterOptions{})
	// Not started yet, it has nothing of the log: promotion is refused.
	if _, err := cli.MemberPromote(ctx, id); !errors.Is(err, rpctypes.ErrMemberLearnerNotReady) {
		t.Fatalf("promoting a learner that is behind: %v, want %v", err, rpctypes.ErrMemberLearnerNotReady)
	}
	l.start()
	waitFor(t, 30*time.Second, "the learner to catch up and be promoted", func() bool {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		defer pcancel()
		_, err := cli.MemberPromote(pctx, id)
		return err == nil
	})
	// Every member learns of the promotion once it applies it.
	for _, m := range ms {
		mc := client(t, m)
		waitFor(t, 10*time.Second, m.name+" to list 4 voting members", func() bool {
			ml, err := mc.MemberList(ctx, clientv3.WithSerializable())
			if err != nil || len(ml.Members) != 4 {
				return false
			}
			for _, mm := range ml.Members {
				if mm.IsLearner {
					return false
				}
			}
			return true
		})
	}
}

func TestRestartedMemberCatchesUpBySnapshot(t *testing.T) {
	opts := clusterOptions{snapshotCount: 100, catchUpEntries: 10}
	ms := newCluster(t, 3, opts)
	cli := client(t, ms[0], ms[1])
	lagging := ms[2]
	if l := leader(t, ms); l == lagging {
		lagging = ms[1]
		cli = client(t, ms[0], ms[2])
	}
	lagging.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 400; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("snap/%04d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	lagging.start()
	waitHealthy(t, lagging)
	lc := client(t, lagging)
	waitFor(t, 30*time.Second, "the restarted member to catch up", func() bool {
		c, cc := context.WithTimeout(ctx, time.Second)
		defer cc()
		resp, err := lc.Get(c, "snap/", clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithSerializable())
		return err == nil && resp.Count == 400
	})
	if !strings.Contains(lagging.log(), "installed snapshot from the leader") {
		t.Errorf("the member caught up without a snapshot; log:\n%s", lagging.log())
	}
}
