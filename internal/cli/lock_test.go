package cli_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/client/clienttest"
)

// countKeys counts the keys under prefix.
func countKeys(t *testing.T, c *client.Client, prefix string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	end := []byte(prefix)
	end[len(end)-1]++
	resp, err := c.KV.Range(ctx, &pb.RangeRequest{Key: []byte(prefix), RangeEnd: end, CountOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestLockCommand(t *testing.T) {
	cairn := cairnBinary(t)
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	endpoints := "--endpoints=" + strings.Join(cluster.Endpoints(), ",")
	c, err := client.New(client.Config{Endpoints: cluster.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

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
	out, err := exec.Command(cairn, endpoints, "lock", "job", "--", "sh", "-c", "exit 7").CombinedOutput()
	if exitCode(err) != 7 || string(out) != "Error: exit status 7\n" {
		t.Errorf("lock with a failing command: exit %d, printed %q", exitCode(err), out)
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
	cairn := cairnBinary(t)
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	endpoints := "--endpoints=" + strings.Join(cluster.Endpoints(), ",")
	c, err := client.New(client.Config{Endpoints: cluster.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var observerOut, firstOut, secondOut syncBuffer
	observer := startCommand(t, cairn, &observerOut, endpoints, "elect", "--listen", "svc")
	first := startCommand(t, cairn, &firstOut, endpoints, "elect", "svc", "node-1")
	clienttest.Poll(t, 20*time.Second, "node-1 elected", func() bool { return strings.HasSuffix(firstOut.String(), "\nnode-1\n") })
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
