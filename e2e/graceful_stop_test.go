package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestGracefulStopOfLeaderHandsOffLeadership: a leader stopped with
// SIGTERM first hands leadership to a caught-up follower, as etcd does: the
// cluster has a new leader at once, one term later (without the hand-off
// the followers wait out an election timeout, and split votes can cost
// more terms).
func TestGracefulStopOfLeaderHandsOffLeadership(t *testing.T) {
	ms := newCluster(t, 3, clusterOptions{})
	old, rest := leaderAndRest(t, ms)
	cli := client(t, rest...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before, err := cli.Status(ctx, rest[0].curl)
	if err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	old.stop()
	if !strings.Contains(old.log(), "transferred leadership before stopping") {
		t.Errorf("the leader's log does not say it handed off leadership:\n%s", old.log())
	}
	var newLeader *member
	waitFor(t, 10*time.Second, "a new leader", func() bool { newLeader = leader(t, rest); return newLeader != nil })
	t.Logf("new leader %s %v after SIGTERM of the leader", newLeader.name, time.Since(stoppedAt).Round(time.Millisecond))
	after, err := cli.Status(ctx, newLeader.curl)
	if err != nil {
		t.Fatal(err)
	}
	if after.RaftTerm != before.RaftTerm+1 {
		t.Errorf("term went from %d to %d, want one more", before.RaftTerm, after.RaftTerm)
	}
}
