//go:build linux

package diskfaults

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/faultfs"
)

// stallFsync stalls every fsync of m's data dir for d from now, and makes
// m write something so that its raft loop is caught in the stall.
func (c *cluster) stallFsync(m *member, d time.Duration) {
	c.fs.Set(faultfs.Faults{FsyncDelay: d, Only: c.onMember(m)})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d+5*time.Second)
		defer cancel()
		c.client(m).Put(ctx, "stall-trigger", "x")
	}()
	time.AfterFunc(d, func() { c.fs.Set(faultfs.Faults{}) })
}

// TestLeaseKeptAliveThroughFollowerSurvivesLeaderFsyncStall: a client
// keeps its lease alive through a follower while the leader's fsyncs stall
// for 8 s (another member is elected meanwhile). The old leader, once its
// disk answers again, must not revoke the lease: the key stays, the lease
// lives, the keep-alives go on, for three TTLs after the stall.
func TestLeaseKeptAliveThroughFollowerSurvivesLeaderFsyncStall(t *testing.T) {
	for _, srv := range []string{"cairn", "etcd"} {
		t.Run(srv, func(t *testing.T) {
			c := startCluster(t, binaries(t)[srv](t))
			lead := c.leader()
			var follower *member
			for _, m := range c.members {
				if m != lead {
					follower = m
					break
				}
			}
			cli := c.client(follower)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			const ttl = 5
			grant, err := cli.Grant(ctx, ttl)
			if err != nil {
				t.Fatal(err)
			}
			put, err := cli.Put(ctx, "leased", "v", clientv3.WithLease(grant.ID))
			if err != nil {
				t.Fatal(err)
			}
			ka, err := cli.KeepAlive(ctx, grant.ID)
			if err != nil {
				t.Fatal(err)
			}
			// The stall begins once the leader has answered a keep-alive.
			if _, ok := <-ka; !ok {
				t.Fatal("the keep-alive channel closed before the first answer")
			}
			var lastKeepAlive atomic.Int64
			lastKeepAlive.Store(time.Now().UnixNano())
			kaClosed := make(chan struct{})
			go func() {
				defer close(kaClosed)
				for range ka {
					lastKeepAlive.Store(time.Now().UnixNano())
				}
			}()
			deleted := make(chan struct{})
			wch := cli.Watch(ctx, "leased", clientv3.WithRev(put.Header.Revision+1))
			go func() {
				for wr := range wch {
					for _, ev := range wr.Events {
						if ev.Type == mvccpb.DELETE {
							close(deleted)
							return
						}
					}
				}
			}()

			const stall = 8 * time.Second
			start := time.Now()
			c.stallFsync(lead, stall)
			t.Logf("%s's fsyncs stalled from %s for %v; keep-alives through %s", lead.name, start.UTC().Format("15:04:05.000"), stall, follower.name)
			observe := time.NewTimer(stall + 3*ttl*time.Second)
			defer observe.Stop()
			select {
			case <-deleted:
				t.Fatalf("the leased key was deleted %v after the stall began (stall %v, TTL %ds, keep-alives through %s, the last answered %v after the stall began)",
					time.Since(start).Round(time.Millisecond), stall, ttl, follower.name, time.Unix(0, lastKeepAlive.Load()).Sub(start).Round(time.Millisecond))
			case <-kaClosed:
				t.Fatalf("the keep-alive channel closed %v after the stall began, the last keep-alive answered %v after it: the client lost its lease",
					time.Since(start).Round(time.Millisecond), time.Unix(0, lastKeepAlive.Load()).Sub(start).Round(time.Millisecond))
			case <-observe.C:
			}
			if newLead := c.leader(); newLead == lead {
				t.Logf("note: %s still leads after its %v stall", lead.name, stall)
			}
			resp, err := cli.Get(ctx, "leased")
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Kvs) != 1 {
				t.Fatalf("the leased key is gone after the stall")
			}
			ttlResp, err := cli.TimeToLive(ctx, grant.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ttlResp.TTL <= 0 {
				t.Fatalf("the lease has TTL %d after the stall", ttlResp.TTL)
			}
		})
	}
}

// TestStalledLeaderPromisesNoLeaseItCannotKeep: a client keeps its lease
// alive through the leader alone while the leader's fsyncs stall for 10 s.
// Another member is elected and, never hearing from the client, revokes
// the lease when its TTL has run out. The stalled leader must not go on
// answering the keep-alives meanwhile: no answer may promise the client
// its lease past the moment the cluster revoked it.
func TestStalledLeaderPromisesNoLeaseItCannotKeep(t *testing.T) {
	for _, srv := range []string{"cairn", "etcd"} {
		t.Run(srv, func(t *testing.T) {
			c := startCluster(t, binaries(t)[srv](t))
			lead := c.leader()
			var other *member
			for _, m := range c.members {
				if m != lead {
					other = m
					break
				}
			}
			cli := c.client(lead)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			const ttl = 5
			grant, err := cli.Grant(ctx, ttl)
			if err != nil {
				t.Fatal(err)
			}
			put, err := cli.Put(ctx, "leased", "v", clientv3.WithLease(grant.ID))
			if err != nil {
				t.Fatal(err)
			}
			ka, err := cli.KeepAlive(ctx, grant.ID)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := <-ka; !ok {
				t.Fatal("the keep-alive channel closed before the first answer")
			}
			// promised is how long after the stall began the last answer
			// told the client its lease would live.
			var promised atomic.Int64
			// Long enough for the new leader to revoke the lease (its TTL and an
			// election timeout after its election) before the stall ends.
			const stall = 10 * time.Second
			start := time.Now()
			go func() {
				for resp := range ka {
					promised.Store(int64(time.Since(start) + time.Duration(resp.TTL)*time.Second))
				}
			}()
			deleted := make(chan time.Duration, 1)
			go func() {
				for wr := range c.client(other).Watch(ctx, "leased", clientv3.WithRev(put.Header.Revision+1)) {
					for _, ev := range wr.Events {
						if ev.Type == mvccpb.DELETE {
							deleted <- time.Since(start)
							return
						}
					}
				}
			}()
			c.stallFsync(lead, stall)
			select {
			case at := <-deleted:
				if p := time.Duration(promised.Load()); p > at {
					t.Fatalf("the lease was revoked %v after the stall began, but the stalled leader's keep-alive answers promised it until %v",
						at.Round(time.Millisecond), p.Round(time.Millisecond))
				}
				t.Logf("the lease was revoked %v after the stall began; the last answer promised it until %v",
					at.Round(time.Millisecond), time.Duration(promised.Load()).Round(time.Millisecond))
			case <-time.After(stall + 3*ttl*time.Second):
				t.Fatalf("the lease, kept alive through the stalled leader only, is still there %v after the stall began", stall+3*ttl*time.Second)
			}
		})
	}
}
