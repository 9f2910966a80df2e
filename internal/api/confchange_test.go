package api

import (
	"context"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/testnet"
	"github.com/cairnkv/cairn/pkg/etcdref"
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

// TestBackToBackConfChangesEtcd is the control: etcd 3.7.3 answers the
// same calls (60 in about a second).
func TestBackToBackConfChangesEtcd(t *testing.T) {
	backToBackUpdates(t, etcdref.Start(t, testnet.FreeURL(t), testnet.FreeURL(t)), 20)
}
