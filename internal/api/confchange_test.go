package api

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/testnet"
)

// backToBackUpdates updates the member at endpoint with its own peer URLs
// three times in a row, rounds times over. Each call must be answered well
// within the member's request timeout (7 s): a conf change lost on the way
// shows as a deadline here.
func backToBackUpdates(t *testing.T, endpoint string, rounds int) {
	t.Helper()
	cli := newClient(t, endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	self := list.Members[0]
	for round := range rounds {
		for call := range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			start := time.Now()
			_, err := cli.MemberUpdate(ctx, self.ID, self.PeerURLs)
			cancel()
			if err != nil {
				t.Fatalf("round %d, call %d: MemberUpdate after %v: %v", round, call+1, time.Since(start).Round(time.Millisecond), err)
			}
		}
	}
}

// TestBackToBackConfChanges: a conf change sent as soon as the one before
// it was answered used to be emptied by raft, which takes one conf change
// at a time and had not yet been told that the member applied the one
// before; its client waited for the request timeout (about one call in
// three). etcd answers them all.
func TestBackToBackConfChanges(t *testing.T) {
	m := startInProcess(t, 1, nil)[0]
	backToBackUpdates(t, m.curl, 20)
}

// TestBackToBackConfChangesThroughAFollower: a follower's conf changes go
// to the leader, whose raft must have caught up too; the read index round
// each change begins with sees to it.
func TestBackToBackConfChangesThroughAFollower(t *testing.T) {
	for _, m := range startInProcess(t, 3, nil) {
		if m.s.Leader() != m.s.ID() {
			backToBackUpdates(t, m.curl, 20)
			return
		}
	}
}

// TestBackToBackConfChangesEtcd is the control: etcd 3.7.3 answers the
// same calls (60 in about a second).
func TestBackToBackConfChangesEtcd(t *testing.T) {
	backToBackUpdates(t, etcdref.Start(t, testnet.FreeURL(t), testnet.FreeURL(t)), 20)
}

// reAddInTheSameSecond adds a learner, removes it and adds it again at once
// on the member at endpoint. The member ID is a hash of the peer URLs and
// the second, so the second add has the removed member's ID (unless the
// second turned in between: then it is tried again with other URLs), and
// a removed ID never comes back: it must be refused at once, as etcd
// refuses it, with "member not found".
func reAddInTheSameSecond(t *testing.T, endpoint string) {
	t.Helper()
	cli := newClient(t, endpoint)
	for try := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		urls := []string{fmt.Sprintf("http://127.0.0.1:%d", 1000+try)}
		added, err := cli.MemberAddAsLearner(ctx, urls)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.MemberRemove(ctx, added.Member.ID); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		again, err := cli.MemberAddAsLearner(ctx, urls)
		took := time.Since(start)
		if err == nil && again.Member.ID != added.Member.ID {
			t.Logf("the second turned between the adds (IDs %x, %x): again", added.Member.ID, again.Member.ID)
			if _, err := cli.MemberRemove(ctx, again.Member.ID); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !errors.Is(err, rpctypes.ErrMemberNotFound) || took > time.Second {
			t.Fatalf("adding the removed member %x again: %v after %v, want %v at once", added.Member.ID, err, took.Round(time.Millisecond), rpctypes.ErrMemberNotFound)
		}
		// And removing it again is refused alike.
		if _, err := cli.MemberRemove(ctx, added.Member.ID); !errors.Is(err, rpctypes.ErrMemberNotFound) {
			t.Fatalf("removing the removed member %x again: %v, want %v", added.Member.ID, err, rpctypes.ErrMemberNotFound)
		}
		return
	}
	t.Fatal("every try crossed a second")
}

// TestReAddOfARemovedMemberInTheSameSecond: the add used to go through to
// the apply, which refused the removed ID but answered under no request
// ID: the client waited for the request timeout (7 s).
func TestReAddOfARemovedMemberInTheSameSecond(t *testing.T) {
	reAddInTheSameSecond(t, startInProcess(t, 1, nil)[0].curl)
}

func TestReAddOfARemovedMemberInTheSameSecondEtcd(t *testing.T) {
	reAddInTheSameSecond(t, etcdref.Start(t, testnet.FreeURL(t), testnet.FreeURL(t)))
}
