package server

import (
	"context"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// TestProposalLostWithItsLeader: a follower proposes right after its
// leader stopped. The follower sees the leader's process gone and the
// others elect a new leader at once (leaderGone): the proposal is either
// dropped by raft while the follower has no leader and proposed again to
// the new one, or forwarded to the stopped leader and lost with it; then it
// fails with etcd's "possibly due to previous leader failure" as soon as
// the new leader's first entry is applied. Either way it does not wait for
// its timeout (200 ms of election timeout here, 5.4 s of request timeout).
func TestProposalLostWithItsLeader(t *testing.T) {
	ss := startCluster(t, 3)
	lead := -1
	for i, s := range ss {
		if s.Leader() == s.ID() {
			lead = i
		}
	}
	if lead < 0 {
		t.Fatal("no member leads")
	}
	follower := ss[(lead+1)%3]
	ss[lead].Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before := time.Now()
	_, err := follower.Propose(ctx, &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k")}})
	took := time.Since(before)
	if err != nil && err != ErrTimeoutDueToLeaderFail {
		t.Errorf("propose: %v, want success or %v", err, ErrTimeoutDueToLeaderFail)
	}
	if took > follower.cfg.ElectionTimeout {
		t.Errorf("propose took %v (%v), more than an election timeout", took, err)
	}
	if l := follower.Leader(); l == 0 || l == ss[lead].ID() {
		t.Errorf("the follower's leader is %x, want a new one", l)
	}
}
