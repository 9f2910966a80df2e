package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cairnkv/cairn/internal/cliutil/metrics"
)

// gauge is the value of the metric name at endpoint: the sum of its
// samples that have the labels of labelPairs (name, value, name, value...).
func gauge(t *testing.T, endpoint, name string, labelPairs ...string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	samples, err := metrics.NewReader(endpoint, nil, 5*time.Second).Samples(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
next:
	for _, s := range samples {
		for i := 0; i+1 < len(labelPairs); i += 2 {
			if s.Labels[labelPairs[i]] != labelPairs[i+1] {
				continue next
			}
		}
		sum += s.Value
	}
	return sum
}

// TestGRPCProxyCoalescesWatches: watchers of the same prefix from many
// clients of a proxy cost the member one watch; each gets every event once
// and in order, a watcher from an earlier revision gets the events from
// it, and a client that does not read holds back no other and later gets
// all it missed.
func TestGRPCProxyCoalescesWatches(t *testing.T) {
	ms := newCluster(t, 1, clusterOptions{})
	_, addr := startProxy(t, "--endpoints", ms[0].curl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const clients, puts = 20, 500
	var chans []clientv3.WatchChan
	for range clients {
		cli := proxyClient(t, addr, clientv3.Config{})
		wch := cli.Watch(ctx, "w/", clientv3.WithPrefix(), clientv3.WithCreatedNotify())
		if r := <-wch; !r.Created {
			t.Fatalf("first response of a watch: %+v", r)
		}
		chans = append(chans, wch)
	}
	waitFor(t, 10*time.Second, "one watch on the member and 19 coalescing in the proxy", func() bool {
		return gauge(t, ms[0].curl, "etcd_debugging_mvcc_watcher_total") == 1 &&
			gauge(t, addr, "etcd_grpc_proxy_watchers_coalescing_total") == clients-1
	})

	// A client that reads nothing, with the smallest flow-control window:
	// the proxy cannot send it more than 64 KiB.
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(1<<16), grpc.WithInitialConnWindowSize(1<<16))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	slow, err := pb.NewWatchClient(conn).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := slow.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{
		Key: []byte("w/"), RangeEnd: []byte("w0")}}}); err != nil {
		t.Fatal(err)
	}
	if r, err := slow.Recv(); err != nil || !r.Created {
		t.Fatalf("creation of the slow watch: %v %v", r, err)
	}

	direct := client(t, ms...)
	value := strings.Repeat("v", 2048) // 500 × 2 KiB: more than the slow client's window and the proxy's queues
	var revs []int64
	for i := range puts {
		resp, err := direct.Put(ctx, fmt.Sprintf("w/%03d", i), value)
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, resp.Header.Revision)
	}
	expect := func(who string, wch clientv3.WatchChan, from int) {
		t.Helper()
		for next := from; next < puts; {
			r, ok := <-wch
			if !ok || r.Err() != nil {
				t.Fatalf("%s: watch ended after %d of %d events: %v", who, next-from, puts-from, r.Err())
			}
			for _, ev := range r.Events {
				if next >= puts || ev.Kv.ModRevision != revs[next] {
					t.Fatalf("%s: event at revision %d, want %d (event %d)", who, ev.Kv.ModRevision, revs[min(next, puts-1)], next)
				}
				next++
			}
		}
	}
	for i, wch := range chans {
		expect(fmt.Sprintf("watcher %d", i), wch, 0)
	}
	// The slow client's watcher left the shared watch for one of its own.
	if n := gauge(t, ms[0].curl, "etcd_debugging_mvcc_watcher_total"); n != 2 {
		t.Errorf("%v watches on the member, want 2: the shared one and the slow client's", n)
	}

	// From an earlier revision: a watch of its own on the member, as the
	// shared one has gone past it.
	late := proxyClient(t, addr, clientv3.Config{})
	expect("a watcher from the 51st put", late.Watch(ctx, "w/", clientv3.WithPrefix(), clientv3.WithRev(revs[50])), 50)

	// The slow client gets everything it missed, once, in order.
	for next := 0; next < puts; {
		r, err := slow.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range r.Events {
			if next >= puts || ev.Kv.ModRevision != revs[next] {
				t.Fatalf("slow client: event at revision %d, want event %d", ev.Kv.ModRevision, next)
			}
			next++
		}
	}

	// A watch from a compacted revision ends as a member ends it.
	if _, err := direct.Compact(ctx, revs[100]); err != nil {
		t.Fatal(err)
	}
	r := <-late.Watch(ctx, "w/", clientv3.WithPrefix(), clientv3.WithRev(revs[10]))
	if r.Err() != rpctypes.ErrCompacted || r.CompactRevision != revs[100] {
		t.Errorf("a watch from a compacted revision: %v, compact revision %d, want %v at %d", r.Err(), r.CompactRevision, rpctypes.ErrCompacted, revs[100])
	}
}

// TestGRPCProxyCoalescesKeepAlives: clients of a proxy that keep the same
// lease alive cost the member one keep-alive stream, and the lease lives;
// a user who may not renew the lease is refused even while another user's
// renewals go on; a revoked lease ends every client's keep-alive.
func TestGRPCProxyCoalescesKeepAlives(t *testing.T) {
	ms := newCluster(t, 1, clusterOptions{})
	_, addr := startProxy(t, "--endpoints", ms[0].curl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	direct := client(t, ms...)
	lease, err := direct.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	const clients = 10
	var chans []<-chan *clientv3.LeaseKeepAliveResponse
	for range clients {
		ch, err := proxyClient(t, addr, clientv3.Config{}).KeepAlive(ctx, lease.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r := <-ch; r == nil || r.TTL <= 0 {
			t.Fatalf("first keep-alive answer: %+v", r)
		}
		chans = append(chans, ch)
	}
	// Three TTLs: the point is time passing, with renewals every 2/3 s.
	time.Sleep(6 * time.Second)
	if ttl, err := direct.TimeToLive(ctx, lease.ID); err != nil || ttl.TTL <= 0 {
		t.Fatalf("the lease after three TTLs kept alive through the proxy: %+v %v", ttl, err)
	}
	if n := gauge(t, ms[0].curl, "grpc_server_started_total", "grpc_method", "LeaseKeepAlive"); n != 1 {
		t.Errorf("%v keep-alive streams on the member, want 1 for %d clients", n, clients)
	}

	// With auth on, a user's renewals go on a stream of its own token.
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(direct.Put(ctx, "a/leased", "v", clientv3.WithLease(lease.ID)))
	must(direct.RoleAdd(ctx, "root"))
	must(direct.UserAdd(ctx, "root", "rootpw"))
	must(direct.UserGrantRole(ctx, "root", "root"))
	must(direct.UserAdd(ctx, "bob", "pw")) // no role: may not write a/leased
	must(direct.AuthEnable(ctx))
	root := proxyClient(t, addr, clientv3.Config{Username: "root", Password: "rootpw"})
	rootCh, err := root.KeepAlive(ctx, lease.ID)
	if err != nil {
		t.Fatal(err)
	}
	bob := proxyClient(t, addr, clientv3.Config{Username: "bob", Password: "pw"})
	for range 3 {
		if _, err := bob.KeepAliveOnce(ctx, lease.ID); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Fatalf("bob renews a lease of a key he may not write: %v, want %v", err, rpctypes.ErrPermissionDenied)
		}
	}

	if _, err := root.Revoke(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	for i, ch := range append(chans, rootCh) {
		waitFor(t, 10*time.Second, fmt.Sprintf("keep-alive %d to end with the lease", i), func() bool {
			select {
			case _, ok := <-ch:
				return !ok
			default:
				return false
			}
		})
	}
}
