package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// TestMemberAddedAfterSnapshotJoins: a member added after the leader's last
// snapshot, once the leader's log no longer reaches back to its start, gets
// a snapshot that names it and joins at once. The leader used to send its
// stored snapshot, from before the member was added, which the new member's
// raft refuses ("not in the ConfState"), again and again until the leader
// stored a newer one: with no writes, never (etcd's robustness suite met it
// as a replaced member that took 13 s to start under load).
func TestMemberAddedAfterSnapshotJoins(t *testing.T) {
	opts := clusterOptions{snapshotCount: 100, catchUpEntries: 10}
	ms := newCluster(t, 3, opts)
	cli := client(t, ms...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := 0; i < 150; i++ { // a snapshot near index 100, the log compacted to 10 below it
		if _, err := cli.Put(ctx, fmt.Sprintf("k/%03d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}

	_, rest := leaderAndRest(t, ms)
	gone := rest[0]
	st, err := client(t, gone).Status(ctx, gone.curl)
	if err != nil {
		t.Fatal(err)
	}
	var keep []*member
	for _, m := range ms {
		if m != gone {
			keep = append(keep, m)
		}
	}
	// The removal goes through the members that stay: the removed one
	// stops once it applies its removal, and may close the connection
	// before its answer is out.
	kcli := client(t, keep...)
	// --strict-reconfig-check refuses a removal until every member has been
	// active for 5 s: try until then.
	waitFor(t, 20*time.Second, "the follower to be removed", func() bool {
		_, err = kcli.MemberRemove(ctx, st.Header.MemberId)
		return !errors.Is(err, rpctypes.ErrUnhealthy)
	})
	if err != nil {
		t.Fatal(err)
	}
	gone.kill() // it stops by itself once it learns of its removal; make sure
	if _, err := kcli.Put(ctx, "last", "before the new member"); err != nil {
		t.Fatal(err)
	}

	added, _ := addMember(ctx, t, kcli, keep, opts, "replacement", kcli.MemberAdd)
	added.start()
	acli := client(t, added)
	// No more writes: the leader takes no new snapshot.
	waitFor(t, 20*time.Second, "the new member to serve a linearizable read of the last write", func() bool {
		c, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		resp, err := acli.Get(c, "last")
		return err == nil && len(resp.Kvs) == 1
	})
	if strings.Contains(added.log(), "not in the ConfState") {
		t.Errorf("the new member was sent a snapshot that does not name it; log:\n%s", added.log())
	}
}
