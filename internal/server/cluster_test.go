package server

import (
	"context"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// TestConfChangeRefusedAtApplyIsAnswered: a conf change that the apply
// refuses (here a removed member's ID, which MemberAdd refuses before it
// proposes) is answered with the refusal; it used to be answered under no
// request ID, and its proposer waited for the request timeout (7 s).
func TestConfChangeRefusedAtApplyIsAnswered(t *testing.T) {
	s := startCluster(t, 1)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, _, err := s.MemberAdd(ctx, []string{"http://127.0.0.1:1"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.MemberRemove(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.MemberAdd(ctx, m.PeerURLs, true); err != ErrMemberIDRemoved && err != nil {
		t.Fatalf("add the removed member's URLs again: %v, want %v (or a new ID past a second)", err, ErrMemberIDRemoved)
	}
	start := time.Now()
	if err := s.proposeConfChange(ctx, raftpb.ConfChangeType_ConfChangeAddLearnerNode, m); err != ErrMemberIDRemoved {
		t.Fatalf("a conf change that adds the removed member %x: %v after %v, want %v", m.ID, err, time.Since(start), ErrMemberIDRemoved)
	}
}
