package client_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/client/clienttest"
)

// partitionedRequestBound is how long a request may take while a member is
// cut off from its peers: it must go to a member with a leader at once.
const partitionedRequestBound = time.Second

// isolateFollower cuts a follower off from its peers and waits until it
// knows it has no leader and the others still have one.
func isolateFollower(t *testing.T, cluster *clienttest.Cluster) *clienttest.Member {
	t.Helper()
	isolated := cluster.Follower()
	cluster.Isolate(isolated)
	cluster.WaitNoLeader(isolated)
	for _, m := range cluster.Members {
		if m != isolated {
			cluster.WaitHealthy(m)
		}
	}
	return isolated
}

// TestCLIPutAvoidsIsolatedFollower runs `cairn put` with a follower that is
// cut off from its peers (its client port answers, it has no leader) first,
// second or last in --endpoints: every put must succeed within a second.
// A fresh client must not send its first request to the leaderless member,
// nor wait for its periodic health probe to find it out.
func TestCLIPutAvoidsIsolatedFollower(t *testing.T) {
	for _, server := range clienttest.Servers(t) {
		t.Run(server.Name, func(t *testing.T) { cliPutAvoidsIsolatedFollower(t, server.Command) })
	}
}

func cliPutAvoidsIsolatedFollower(t *testing.T, server []string) {
	cairn := clienttest.CairnBinary(t)
	cluster := clienttest.StartCluster(t, clienttest.Options{Size: 3, PeerProxy: true, Server: server})
	isolated := isolateFollower(t, cluster)
	var others []string
	for _, m := range cluster.Members {
		if m != isolated {
			others = append(others, m.Endpoint())
		}
	}
	const runsPerPosition = 4
	failed := 0
	for pos, name := range []string{"first", "second", "last"} {
		endpoints := slices.Insert(slices.Clone(others), pos, isolated.Endpoint())
		for i := range runsPerPosition {
			key := fmt.Sprintf("k-%s-%d", name, i)
			began := time.Now()
			// The command timeout is the bound: a put that waits for the
			// isolated member fails.
			out, err := exec.Command(cairn, "--endpoints", strings.Join(endpoints, ","),
				"--command-timeout", partitionedRequestBound.String(), "put", key, "v").CombinedOutput()
			took := time.Since(began)
			if err != nil || strings.TrimSpace(string(out)) != "OK" || took > partitionedRequestBound {
				failed++
				t.Errorf("isolated member %s: put %s took %v: %v: %s", name, key, took.Round(time.Millisecond), err, strings.TrimSpace(string(out)))
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d puts failed or were slow", failed, 3*runsPerPosition)
	}
}

// TestClientKeepsWorkingThroughPartition cuts off a follower while a
// long-lived client (default settings) writes without pause, and while its
// watch and lease keep-alive are served by that follower. Each write has a
// second: at most one may fail (the one that was in flight at the cut has
// an unknown outcome). The watch must move to another member and deliver
// every revision exactly once, in order; the keep-alive must move too and
// the lease stay alive.
func TestClientKeepsWorkingThroughPartition(t *testing.T) {
	for _, server := range clienttest.Servers(t) {
		t.Run(server.Name, func(t *testing.T) { clientKeepsWorkingThroughPartition(t, server.Command) })
	}
}

func clientKeepsWorkingThroughPartition(t *testing.T, server []string) {
	cluster := clienttest.StartCluster(t, clienttest.Options{Size: 3, PeerProxy: true, Server: server})
	ctx := testContext(t)
	isolated := cluster.Follower()
	// Streams opened while the client knows only the follower are served
	// by it.
	c := newClient(t, client.Config{Endpoints: []string{isolated.Endpoint()}})
	isolatedID := memberID(t, ctx, c, isolated.Endpoint())
	first := put(t, ctx, c, "b/first", "").Header.Revision
	w := c.Watch(ctx, &pb.WatchCreateRequest{Key: []byte("b/"), RangeEnd: []byte("b0"), StartRevision: first})
	expectEvent(t, ctx, w, "b/first")
	lease, err := c.Lease.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 5})
	if err != nil {
		t.Fatal(err)
	}
	renewals := c.KeepAlive(ctx, lease.ID)
	if r := <-renewals; r == nil || r.Header.MemberId != isolatedID {
		t.Fatalf("first renewal %v, want one from the follower %x", r, isolatedID)
	}
	if err := c.SetEndpoints(cluster.Endpoints()...); err != nil {
		t.Fatal(err)
	}

	var (
		mu       sync.Mutex
		last     = first
		writes   int
		failures []string
	)
	stopWriting := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 0; ; i++ {
			select {
			case <-stopWriting:
				return
			default:
			}
			putCtx, cancel := context.WithTimeout(ctx, partitionedRequestBound)
			began := time.Now()
			resp, err := c.KV.Put(putCtx, &pb.PutRequest{Key: fmt.Appendf(nil, "b/%d", i)})
			cancel()
			mu.Lock()
			writes++
			if err != nil {
				failures = append(failures, fmt.Sprintf("put b/%d after %v: %v", i, time.Since(began).Round(time.Millisecond), err))
			} else {
				last = max(last, resp.Header.Revision)
			}
			mu.Unlock()
		}
	}()
	writesSoFar := func() int {
		mu.Lock()
		defer mu.Unlock()
		return writes
	}
	clienttest.Poll(t, testTimeout, "writes before the cut", func() bool { return writesSoFar() >= 20 })
	cluster.Isolate(isolated)
	cut := time.Now()
	cluster.WaitNoLeader(isolated)
	before := writesSoFar()
	// Go on past the health probe's interval, so that the client has had to
	// deal with the leaderless member whichever way it learns of it.
	clienttest.Poll(t, testTimeout, "writes through the partition", func() bool {
		return writesSoFar() >= before+50 && time.Since(cut) > 2*client.DefaultHealthProbeInterval
	})
	close(stopWriting)
	<-writerDone
	t.Logf("%d writes, %d before the cut; failed: %q", writes, before, failures)
	if len(failures) > 1 {
		t.Errorf("%d of %d writes failed through the partition, want at most 1:\n%s", len(failures), writes, strings.Join(failures, "\n"))
	}

	// The event at first was delivered before the cut.
	seen := map[int64]int{}
	next := first + 1
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
			t.Fatalf("watch delivered up to revision %d of %d: it did not leave the isolated member", next-1, last)
		}
	}
	for rev := first + 1; rev <= last; rev++ {
		if seen[rev] != 1 {
			t.Errorf("revision %d delivered %d times, want once", rev, seen[rev])
		}
	}

	for moved := false; !moved; {
		select {
		case r, ok := <-renewals:
			if !ok {
				t.Fatal("keep-alive ended")
			}
			moved = r.Header.MemberId != isolatedID
		case <-ctx.Done():
			t.Fatal("no renewal from another member than the isolated one")
		}
	}
	ttl, err := c.Lease.LeaseTimeToLive(ctx, &pb.LeaseTimeToLiveRequest{ID: lease.ID})
	if err != nil {
		t.Fatal(err)
	}
	if ttl.TTL <= 0 {
		t.Fatalf("lease expired while kept alive through the partition (TTL %d)", ttl.TTL)
	}
}

// TestStreamsLeaveMemberThatLosesLeader runs a watch and a lease keep-alive
// on a follower, with the health probe off, and cuts the follower off from
// its peers: the member ends both streams, which require a leader, and
// they must resume on another member, the watch without missing the write
// made meanwhile.
func TestStreamsLeaveMemberThatLosesLeader(t *testing.T) {
	for _, server := range clienttest.Servers(t) {
		t.Run(server.Name, func(t *testing.T) { streamsLeaveMemberThatLosesLeader(t, server.Command) })
	}
}

func streamsLeaveMemberThatLosesLeader(t *testing.T, server []string) {
	cluster := clienttest.StartCluster(t, clienttest.Options{Size: 3, PeerProxy: true, Server: server})
	ctx := testContext(t)
	isolated := cluster.Follower()
	c := newClient(t, client.Config{Endpoints: []string{isolated.Endpoint()}, HealthProbeInterval: -1})
	isolatedID := memberID(t, ctx, c, isolated.Endpoint())
	first := put(t, ctx, c, "s/first", "").Header.Revision
	w := c.Watch(ctx, &pb.WatchCreateRequest{Key: []byte("s/"), RangeEnd: []byte("s0"), StartRevision: first})
	expectEvent(t, ctx, w, "s/first")
	lease, err := c.Lease.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 5})
	if err != nil {
		t.Fatal(err)
	}
	renewals := c.KeepAlive(ctx, lease.ID)
	if r := <-renewals; r == nil || r.Header.MemberId != isolatedID {
		t.Fatalf("first renewal %v, want one from the follower %x", r, isolatedID)
	}
	if err := c.SetEndpoints(cluster.Endpoints()...); err != nil {
		t.Fatal(err)
	}

	cluster.Isolate(isolated)
	cluster.WaitNoLeader(isolated)
	var others []string
	for _, m := range cluster.Members {
		if m != isolated {
			others = append(others, m.Endpoint())
		}
	}
	writer := newClient(t, client.Config{Endpoints: others})
	put(t, ctx, writer, "s/after", "")
	expectEvent(t, ctx, w, "s/after")
	for moved := false; !moved; {
		select {
		case r, ok := <-renewals:
			if !ok {
				t.Fatal("keep-alive ended")
			}
			moved = r.Header.MemberId != isolatedID
		case <-ctx.Done():
			t.Fatal("no renewal from another member than the isolated one")
		}
	}
}
