package robustness

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/etcdref"
)

// TestLeasesKeptAliveThroughASlowLeaderNetwork: every chunk to or from the
// leader's peer port is held 200 ms, for twice the TTL of two leases, one
// kept alive through the leader and one through a follower, while clients
// read linearizably and write through every member. A quorum still answers
// the leader, in 400-800 ms where the election timeout is 500 ms, and no
// election need happen: both leases must live, their keep-alives answered
// all along, as etcd keeps them.
func TestLeasesKeptAliveThroughASlowLeaderNetwork(t *testing.T) {
	const delay = 200 * time.Millisecond
	keepLeasesThroughAFault(t, "every peer chunk held 200 ms", true,
		func(c *cluster, lead *member) { c.net.SetDelay(lead.name, delay) })
}

// TestLeaseKeptAliveThroughAFollowerWhileTheLeaderIsCutOff: the leader's
// peer links are cut for twice the TTL of a lease kept alive through a
// follower, under the same load. The others elect a new leader within a
// second or two; the follower's keep-alives must reach it, the one sent as
// the cut began too, which the follower forwarded to the leader cut off,
// and the lease must live. (A lease kept through the old leader is lost
// with it: not checked.)
func TestLeaseKeptAliveThroughAFollowerWhileTheLeaderIsCutOff(t *testing.T) {
	keepLeasesThroughAFault(t, "every peer link cut", false, func(c *cluster, lead *member) {
		for _, o := range c.list() {
			if o != lead {
				c.net.Block(lead.name, o.name, true)
			}
		}
	})
}

// keepLeasesThroughAFault keeps a lease of 5 s alive through a follower,
// and one through the leader if throughLeader, under reads and writes
// through every member, while inject's fault is on the leader for 10 s, and
// sends one more keep-alive through the follower as the fault begins; then
// it heals the network and checks that the leases live and that no
// keep-alive went unanswered for a TTL.
func keepLeasesThroughAFault(t *testing.T, fault string, throughLeader bool, inject func(c *cluster, lead *member)) {
	for _, server := range []string{"cairn", "etcd"} {
		t.Run(server, func(t *testing.T) {
			if *flagServer != "both" && *flagServer != server {
				t.Skipf("-server %s", *flagServer)
			}
			argv := []string{cairnBin, "serve"}
			if server == "etcd" {
				argv = []string{etcdref.Bin(t, "etcd")}
			}
			c, err := startCluster(t, server, argv, t.TempDir(), false)
			if err != nil {
				t.Fatal(err)
			}
			lead, term := c.leader()
			if lead == nil {
				t.Fatal("no leader")
			}
			var follower *member
			for _, m := range c.list() {
				if m != lead {
					follower = m
					break
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()

			// The load: linearizable reads and puts through every member,
			// each client one at a time, bounded by the test's time.
			for i, m := range c.list() {
				cli, err := c.client(m)
				if err != nil {
					t.Fatal(err)
				}
				defer cli.Close()
				wg.Go(func() {
					for n := 0; ctx.Err() == nil && n < 100000; n++ {
						octx, ocancel := context.WithTimeout(ctx, 2*time.Second)
						if n%4 == 0 {
							cli.Put(octx, fmt.Sprintf("load/%d/%d", i, n%100), "v")
						} else {
							cli.Get(octx, "load/")
						}
						ocancel()
					}
				})
			}

			const ttl = 5
			type kept struct {
				through *member
				id      clientv3.LeaseID
				mu      sync.Mutex
				last    time.Time // the last keep-alive answer
				gap     time.Duration
				closed  bool
			}
			var leases []*kept
			keptThrough := []*member{follower}
			if throughLeader {
				keptThrough = append(keptThrough, lead)
			}
			for _, m := range keptThrough {
				cli, err := c.client(m)
				if err != nil {
					t.Fatal(err)
				}
				defer cli.Close()
				g, err := cli.Grant(ctx, ttl)
				if err != nil {
					t.Fatal(err)
				}
				ka, err := cli.KeepAlive(ctx, g.ID)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := <-ka; !ok {
					t.Fatalf("the keep-alive through %s closed before its first answer", m.name)
				}
				k := &kept{through: m, id: g.ID, last: time.Now()}
				leases = append(leases, k)
				wg.Go(func() {
					for range ka {
						k.mu.Lock()
						now := time.Now()
						k.gap, k.last = max(k.gap, now.Sub(k.last)), now
						k.mu.Unlock()
					}
					k.mu.Lock()
					k.closed = ctx.Err() == nil
					k.mu.Unlock()
				})
			}

			const slow = 2 * ttl * time.Second
			start := time.Now()
			once, err := c.client(follower)
			if err != nil {
				t.Fatal(err)
			}
			defer once.Close()
			inject(c, lead)
			t.Logf("%s (leader, term %d): %s for %v", lead.name, term, fault, slow)
			// A keep-alive sent as the fault begins, while the follower still
			// takes the old leader for the leader.
			onceAnswered := make(chan error, 1)
			wg.Go(func() {
				_, err := once.KeepAliveOnce(ctx, leases[0].id)
				took := time.Since(start)
				t.Logf("a keep-alive sent through %s as the fault began: answered after %v (error: %v)", follower.name, took.Round(time.Millisecond), err)
				if err == nil && took >= ttl*time.Second {
					err = fmt.Errorf("answered after %v", took.Round(time.Millisecond))
				}
				onceAnswered <- err
			})
			time.Sleep(slow) // the fault's length: nothing to wait for
			c.net.Heal()
			time.Sleep(2 * time.Second) // the keep-alives after the heal
			// etcd 3.7.3 holds such a keep-alive for its request timeout (6 s
			// here), then fails it: shown, not failed.
			report := t.Errorf
			if server == "etcd" {
				report = t.Logf
			}
			select {
			case err := <-onceAnswered:
				if err != nil {
					report("a keep-alive sent through %s as the fault began: %v, the lease's TTL is %ds", follower.name, err, ttl)
				}
			default:
				report("a keep-alive sent through %s as the fault began is not answered %v after", follower.name, time.Since(start).Round(time.Millisecond))
			}
			_, termAfter := c.leader()
			t.Logf("raft term %d after the fault (elections: %d)", termAfter, termAfter-term)

			cli, err := c.client(c.list()...)
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			for _, k := range leases {
				k.mu.Lock()
				gap, closed, last := max(k.gap, time.Since(k.last)), k.closed, k.last
				k.mu.Unlock()
				r, err := cli.TimeToLive(ctx, k.id)
				switch {
				case err != nil:
					t.Errorf("lease kept through %s: TimeToLive: %v", k.through.name, err)
				case r.TTL <= 0:
					t.Errorf("lease kept through %s was revoked; its last keep-alive answer came %v after the fault began",
						k.through.name, last.Sub(start).Round(time.Millisecond))
				}
				if closed {
					t.Errorf("the keep-alive channel of the lease kept through %s closed", k.through.name)
				}
				t.Logf("lease kept through %s: longest wait for a keep-alive answer %v", k.through.name, gap.Round(time.Millisecond))
				if gap >= ttl*time.Second {
					t.Errorf("lease kept through %s: no keep-alive answer for %v, its TTL is %ds", k.through.name, gap.Round(time.Millisecond), ttl)
				}
			}
		})
	}
}
