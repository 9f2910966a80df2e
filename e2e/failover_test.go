package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// slowElections are flags for an election timeout long enough that an
// election that waits for it cannot pass for one that did not.
var slowElections = func(string) []string {
	return []string{"--heartbeat-interval", "100", "--election-timeout", "5000"}
}

const leaderGoneLine = "the leader's process is gone"

// TestKilledLeaderIsReplacedAtOnce: when the leader is killed, its
// followers see its connections reset and its peer port refuse new ones;
// they elect a new leader without waiting out the election timeout (5 s
// here), in one term (the voters take turns, so their votes do not split).
func TestKilledLeaderIsReplacedAtOnce(t *testing.T) {
	ms := newCluster(t, 3, clusterOptions{extraArgs: slowElections})
	old, rest := leaderAndRest(t, ms)
	cli := client(t, rest...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before, err := cli.Status(ctx, rest[0].curl)
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	old.kill()
	// A put a follower forwarded to the leader just before it died is lost
	// with it; it fails as soon as that is known, and is sent again, as a
	// client would.
	for attempt := 1; ; attempt++ {
		_, err := cli.Put(ctx, "after-kill", "v")
		if err == nil {
			break
		}
		t.Logf("put %d, %v after the kill: %v", attempt, time.Since(killed), err)
		if ctx.Err() != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(killed)
	t.Logf("first put after the leader's kill: %v", took)
	if took > 2500*time.Millisecond {
		t.Errorf("a put succeeded %v after the leader was killed; the election timeout is 5 s, the followers should not wait for it\n%s:\n%s\n%s:\n%s",
			took, rest[0].name, rest[0].log(), rest[1].name, rest[1].log())
	}
	lead := leader(t, rest)
	if lead == nil {
		t.Fatal("no leader among the survivors")
	}
	after, err := cli.Status(ctx, lead.curl)
	if err != nil {
		t.Fatal(err)
	}
	if after.RaftTerm != before.RaftTerm+1 {
		t.Errorf("term went from %d to %d, want one more", before.RaftTerm, after.RaftTerm)
	}
	if !strings.Contains(rest[0].log()+rest[1].log(), leaderGoneLine) {
		t.Errorf("no follower logged %q", leaderGoneLine)
	}
}

// TestPausedLeaderIsNotTakenForGone: a leader that is paused (SIGSTOP), as
// one behind a partition, resets no connection and refuses none: the
// followers wait out the election timeout, as raft has them do, and never
// take it for gone.
func TestPausedLeaderIsNotTakenForGone(t *testing.T) {
	ms := newCluster(t, 3, clusterOptions{})
	old, rest := leaderAndRest(t, ms)
	old.cmd.Process.Signal(syscall.SIGSTOP)
	t.Cleanup(func() { old.cmd.Process.Signal(syscall.SIGCONT) })
	waitFor(t, 10*time.Second, "a new leader", func() bool { return leader(t, rest) != nil })
	old.cmd.Process.Signal(syscall.SIGCONT)
	waitFor(t, 10*time.Second, "the old leader to follow", func() bool { return leader(t, ms) != old && leader(t, ms) != nil })
	for _, m := range ms {
		if strings.Contains(m.log(), leaderGoneLine) {
			t.Errorf("%s took a paused leader for gone:\n%s", m.name, m.log())
		}
	}
}

// TestWritesDuringHandOff: while a leader stopped with SIGTERM hands
// leadership over, it drops the proposals it gets (raft does, so that the
// transferee catches up), its own clients' and those its followers
// forward. They are held and sent on to the new leader, and the stopping
// member answers the calls it took before it closes its connections: no
// write fails or waits for its timeout, through the followers or through
// every member, the stopping one included.
func TestWritesDuringHandOff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		through func(old *member, rest []*member) []*member
	}{
		{"through the followers", func(_ *member, rest []*member) []*member { return rest }},
		{"through every member", func(old *member, rest []*member) []*member { return append([]*member{old}, rest...) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := newCluster(t, 3, clusterOptions{extraArgs: slowElections})
			old, rest := leaderAndRest(t, ms)
			writesDuringHandOff(t, old, rest, client(t, tc.through(old, rest)...))
		})
	}
}

// writesDuringHandOff puts through cli from 8 writers while old is stopped
// with SIGTERM, and fails the test if a put fails or takes 2 s.
func writesDuringHandOff(t *testing.T, old *member, rest []*member, cli *clientv3.Client) {
	var (
		mu      sync.Mutex
		slowest time.Duration
		errs    []error
		wg      sync.WaitGroup
	)
	stop := make(chan struct{})
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				start := time.Now()
				_, err := cli.Put(ctx, fmt.Sprintf("w%d/%d", w, i), "v")
				cancel()
				mu.Lock()
				slowest = max(slowest, time.Since(start))
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}(w)
	}
	time.Sleep(300 * time.Millisecond) // writes under way when the signal comes
	old.stop()
	waitFor(t, 10*time.Second, "a new leader", func() bool { return leader(t, rest) != nil })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "after", "v"); err != nil { // every writer has been through the hand-off
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	t.Logf("slowest put: %v", slowest)
	if len(errs) > 0 {
		t.Errorf("%d puts failed, the first: %v", len(errs), errs[0])
	}
	if slowest > 2*time.Second {
		t.Errorf("the slowest put took %v", slowest)
	}
}

// TestMoveLeaderReturnsWhenDone: move-leader answers once the new leader
// is elected, not at the next heartbeat after (1 s here).
func TestMoveLeaderReturnsWhenDone(t *testing.T) {
	ms := newCluster(t, 3, clusterOptions{extraArgs: func(string) []string {
		return []string{"--heartbeat-interval", "1000", "--election-timeout", "10000"}
	}})
	old, rest := leaderAndRest(t, ms)
	cli := client(t, old)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := clientv3.NewMaintenance(cli).Status(ctx, rest[0].curl)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := cli.MoveLeader(ctx, st.Header.MemberId); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("move-leader took %v", took)
	if took >= 900*time.Millisecond {
		t.Errorf("move-leader took %v; the transfer takes a few round trips", took)
	}
	if leader(t, ms) != rest[0] {
		t.Errorf("%s does not lead after move-leader", rest[0].name)
	}
}
