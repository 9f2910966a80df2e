package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/client/clienttest"
)

// TestWatchAndKeepAliveSurviveMemberKills kills each member of a 3-member
// cluster in turn while a prefix watch and a lease keep-alive run on a
// client that knows all three: whichever member serves them dies at some
// point. Writes go on meanwhile (retried until they succeed, since a write
// interrupted by the loss of the leader has an unknown outcome). All are
// puts under the watched prefix, so the watch must deliver every revision
// from the first to the last exactly once, in order; and the lease must
// outlive its TTL many times over.
func TestWatchAndKeepAliveSurviveMemberKills(t *testing.T) {
	for _, server := range clienttest.Servers(t) {
		t.Run(server.Name, func(t *testing.T) { watchAndKeepAliveSurviveMemberKills(t, server.Command) })
	}
}

func watchAndKeepAliveSurviveMemberKills(t *testing.T, server []string) {
	cluster := clienttest.StartCluster(t, clienttest.Options{Size: 3, Server: server})
	ctx := testContext(t)
	c := newClient(t, client.Config{Endpoints: cluster.Endpoints(), HealthProbeInterval: 100 * time.Millisecond})
	writer := newClient(t, client.Config{Endpoints: cluster.Endpoints()})

	const ttl = 2
	lease, err := c.Lease.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	renewals := c.KeepAlive(ctx, lease.ID)

	first := put(t, ctx, writer, "w/first", "").Header.Revision
	w := c.Watch(ctx, &pb.WatchCreateRequest{Key: []byte("w/"), RangeEnd: []byte("w0"), StartRevision: first})

	var last int64
	for _, m := range cluster.Members {
		m.Kill()
		for i := range 5 {
			key := fmt.Sprintf("w/%s-%d", m.Name, i)
			clienttest.Poll(t, testTimeout, "put "+key, func() bool {
				resp, err := writer.KV.Put(ctx, &pb.PutRequest{Key: []byte(key)})
				if err == nil {
					last = resp.Header.Revision
				}
				return err == nil
			})
		}
		cluster.Restart(m)
		cluster.WaitHealthy(m)
	}

	seen := map[int64]int{}
	next := first
	for next <= last {
		select {
		case resp, ok := <-w.Responses:
			if !ok || resp.Err != nil {
				t.Fatalf("watch ended: %v", resp.Err)
			}
			for _, ev := range resp.Events {
				rev := ev.Kv.ModRevision
				seen[rev]++
				if rev < next {
					t.Fatalf("event at revision %d delivered again or out of order (expected %d)", rev, next)
				}
				next = rev + 1
			}
		case <-ctx.Done():
			t.Fatalf("watch delivered up to revision %d of %d", next-1, last)
		}
	}
	for rev := first; rev <= last; rev++ {
		if seen[rev] != 1 {
			t.Errorf("revision %d delivered %d times, want once", rev, seen[rev])
		}
	}

	drain(renewals)
	ttlResp, err := writer.Lease.LeaseTimeToLive(ctx, &pb.LeaseTimeToLiveRequest{ID: lease.ID})
	if err != nil {
		t.Fatal(err)
	}
	if ttlResp.TTL <= 0 {
		t.Fatalf("lease expired while kept alive across member kills (TTL %d)", ttlResp.TTL)
	}
}

// drain discards what is buffered on ch without waiting.
func drain(ch <-chan *pb.LeaseKeepAliveResponse) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestHealthProbeMovesOffIsolatedMember cuts a member off from its peers
// while a watch is served by it: the probe sees it has no leader, takes it
// out of rotation, and the watch resumes elsewhere, where new writes happen.
func TestHealthProbeMovesOffIsolatedMember(t *testing.T) {
	for _, server := range clienttest.Servers(t) {
		t.Run(server.Name, func(t *testing.T) { healthProbeMovesOffIsolatedMember(t, server.Command) })
	}
}

func healthProbeMovesOffIsolatedMember(t *testing.T, server []string) {
	cluster := clienttest.StartCluster(t, clienttest.Options{Size: 3, PeerProxy: true, Server: server})
	ctx := testContext(t)
	isolated := cluster.Members[0]
	c := newClient(t, client.Config{Endpoints: []string{isolated.Endpoint()}, HealthProbeInterval: 100 * time.Millisecond})
	writer := newClient(t, client.Config{Endpoints: cluster.Endpoints()[1:]})

	start := put(t, ctx, writer, "p/start", "").Header.Revision
	w := c.Watch(ctx, &pb.WatchCreateRequest{Key: []byte("p/"), RangeEnd: []byte("p0"), StartRevision: start})
	expectEvent(t, ctx, w, "p/start")
	if err := c.SetEndpoints(cluster.Endpoints()...); err != nil {
		t.Fatal(err)
	}

	cluster.Isolate(isolated)
	cluster.WaitNoLeader(isolated)
	// The isolated member may have led: a write forwarded to it just before
	// has an unknown outcome (it times out), so it is retried until it succeeds.
	clienttest.Poll(t, testTimeout, "put p/after", func() bool {
		_, err := writer.KV.Put(ctx, &pb.PutRequest{Key: []byte("p/after")})
		return err == nil
	})
	expectEvent(t, ctx, w, "p/after")

	isolatedID := memberID(t, ctx, c, isolated.Endpoint())
	clienttest.Poll(t, testTimeout, "requests to stay off the isolated member", func() bool {
		for range 6 {
			resp, err := c.KV.Range(ctx, &pb.RangeRequest{Key: []byte("p/after"), Serializable: true})
			if err != nil || resp.Header.MemberId == isolatedID {
				return false
			}
		}
		return true
	})
}

func expectEvent(t *testing.T, ctx context.Context, w *client.Watch, key string) {
	t.Helper()
	select {
	case resp := <-w.Responses:
		if resp.Err != nil || len(resp.Events) != 1 || string(resp.Events[0].Kv.Key) != key {
			t.Fatalf("watch response %+v, want one event on %s", resp, key)
		}
	case <-ctx.Done():
		t.Fatalf("no event on %s", key)
	}
}

func memberID(t *testing.T, ctx context.Context, c *client.Client, endpoint string) uint64 {
	t.Helper()
	conn, err := c.ForEndpoint(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := pb.NewMaintenanceClient(conn).Status(ctx, &pb.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.MemberId
}
