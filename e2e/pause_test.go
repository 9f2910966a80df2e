package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFirstReadAfterLeaderPause: a leader paused (SIGSTOP) long enough for
// the others to elect a new one comes back (SIGCONT) as a stale leader. Its
// first linearizable read used to wait for the read index retry (half an
// election timeout) after the stale round was lost; now the lost leadership
// ends the round at once, and the read is served within a few heartbeats.
func TestFirstReadAfterLeaderPause(t *testing.T) {
	ms := newCluster(t, 3, clusterOptions{})
	old, rest := leaderAndRest(t, ms)
	oldc := client(t, old)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := oldc.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	old.cmd.Process.Signal(syscall.SIGSTOP)
	t.Cleanup(func() { old.cmd.Process.Signal(syscall.SIGCONT) })
	waitFor(t, 10*time.Second, "a new leader", func() bool { return leader(t, rest) != nil })
	// The read is sent while the member is stopped, as a client's would be:
	// it is the first thing the member reads when it resumes.
	read := make(chan error, 1)
	go func() {
		_, err := oldc.Get(ctx, "k")
		read <- err
	}()
	waitFor(t, 5*time.Second, "the read to be sent", func() bool { return unreadBytes(t, old) })
	old.cmd.Process.Signal(syscall.SIGCONT)
	start := time.Now()
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("first linearizable read on the resumed leader: %v", took)
	// The member's heartbeat is 50 ms; the old retry alone took 250 ms.
	if took > 200*time.Millisecond {
		t.Errorf("the first read after the pause took %v", took)
	}
}

// unreadBytes reports whether a connection to m's client port holds bytes
// that m has not read yet (the rx_queue of /proc/net/tcp).
func unreadBytes(t *testing.T, m *member) bool {
	t.Helper()
	u, err := url.Parse(m.curl)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skipf("no /proc/net/tcp: %v", err)
	}
	local := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasSuffix(f[1], local) {
			continue
		}
		if _, rx, ok := strings.Cut(f[4], ":"); ok && strings.Trim(rx, "0") != "" {
			return true
		}
	}
	return false
}
