package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client/clienttest"
)

func TestLockCommand(t *testing.T) {
	cairn := clienttest.CairnBinary(t)
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	endpoints := endpointsFlag(cluster)
	c := clusterClient(t, cluster)

	var holderOut, waiterOut syncBuffer
	holder := startCommand(t, cairn, &holderOut, endpoints, "lock", "job")
	clienttest.Poll(t, 20*time.Second, "the holder to print its key", func() bool {
		return strings.HasPrefix(holderOut.String(), "job/")
	})
	waiter := startCommand(t, cairn, &waiterOut, endpoints, "lock", "--ttl", "5", "job", "--",
		"sh", "-c", `echo "got $ETCD_LOCK_KEY at $ETCD_LOCK_REV"`)
	clienttest.Poll(t, 20*time.Second, "the waiter's claim", func() bool { return countKeys(t, c, "job/") == 2 })
	if out := waiterOut.String(); out != "" {
		t.Fatalf("the waiter ran its command while the lock was held: %q", out)
	}
	stop(t, holder)
	if err := waiter.Wait(); err != nil {
		t.Fatalf("waiter: %v\n%s", err, waiterOut.String())
	}
	if !strings.HasPrefix(waiterOut.String(), "got job/") {
		t.Fatalf("waiter printed %q", waiterOut.String())
	}
	if n := countKeys(t, c, "job/"); n != 0 {
		t.Fatalf("%d lock keys left", n)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	leases, err := c.Lease.LeaseLeases(ctx, &pb.LeaseLeasesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Leases) != 0 {
		t.Errorf("%d session leases left: cairn lock revokes its lease on exit", len(leases.Leases))
	}

	// The command's exit code is lock's.
	stdout, stderr, code := runCairnBinary(t, endpoints, "lock", "job", "--", "sh", "-c", "exit 7")
	if code != 7 || stdout != "" || stderr != "Error: exit status 7\n" {
		t.Errorf("lock with a failing command: exit %d, printed %q and %q on stderr", code, stdout, stderr)
	}

	// Ctrl-C while waiting withdraws the claim and ends cleanly.
	var h2, w2 syncBuffer
	holder = startCommand(t, cairn, &h2, endpoints, "lock", "job")
	clienttest.Poll(t, 20*time.Second, "the holder", func() bool { return h2.String() != "" })
	waiter = startCommand(t, cairn, &w2, endpoints, "lock", "job")
	clienttest.Poll(t, 20*time.Second, "the waiter's claim", func() bool { return countKeys(t, c, "job/") == 2 })
	stop(t, waiter)
	if n := countKeys(t, c, "job/"); n != 1 {
		t.Errorf("%d lock keys after the waiter gave up, want the holder's only", n)
	}
	stop(t, holder)
}

func TestElectCommand(t *testing.T) {
	cairn := clienttest.CairnBinary(t)
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	endpoints := endpointsFlag(cluster)
	c := clusterClient(t, cluster)

	var observerOut, firstOut, secondOut syncBuffer
	observer := startCommand(t, cairn, &observerOut, endpoints, "elect", "--listen", "svc")
	first := startCommand(t, cairn, &firstOut, endpoints, "elect", "svc", "node-1")
	clienttest.Poll(t, 20*time.Second, "node-1 elected", func() bool { return strings.HasSuffix(firstOut.String(), "\nnode-1\n") })
	// The observer, a process of its own, may start watching later.
	clienttest.Poll(t, 20*time.Second, "the observer to see node-1", func() bool { return strings.Contains(observerOut.String(), "\nnode-1\n") })
	second := startCommand(t, cairn, &secondOut, endpoints, "elect", "svc", "node-2")
	clienttest.Poll(t, 20*time.Second, "node-2's candidacy", func() bool { return countKeys(t, c, "svc/") == 2 })
	if secondOut.String() != "" {
		t.Fatalf("node-2 elected while node-1 leads: %q", secondOut.String())
	}
	stop(t, first)
	clienttest.Poll(t, 20*time.Second, "node-2 elected", func() bool { return strings.HasSuffix(secondOut.String(), "\nnode-2\n") })
	clienttest.Poll(t, 20*time.Second, "the observer to see node-2", func() bool {
		return strings.Contains(observerOut.String(), "\nnode-2\n")
	})
	stop(t, second)
	stop(t, observer)
	lines := strings.Split(strings.TrimSpace(observerOut.String()), "\n")
	if len(lines) != 4 || lines[1] != "node-1" || lines[3] != "node-2" || !strings.HasPrefix(lines[0], "svc/") {
		t.Errorf("observer printed:\n%s", observerOut.String())
	}
	if n := countKeys(t, c, "svc/"); n != 0 {
		t.Errorf("%d candidacies left after everyone resigned", n)
	}
}
