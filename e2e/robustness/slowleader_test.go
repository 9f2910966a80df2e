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
			for _, m := range []*member{lead, follower} {
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
			c.net.SetDelay(lead.name, delay)
			t.Logf("%s (leader, term %d): every peer chunk held %v for %v", lead.name, term, delay, slow)
			time.Sleep(slow) // the fault's length: nothing to wait for
			c.net.Heal()
			time.Sleep(2 * time.Second) // the keep-alives after the heal
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
