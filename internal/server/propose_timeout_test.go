package server

import (
	"context"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// TestTimeoutError drives each condition of timeoutError: when the
// proposal started against when the leader took over, who leads, and
// since when the peers have been heard from.
func TestTimeoutError(t *testing.T) {
	const self, a, b, c, d = 1, 2, 3, 4, 5
	elected := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	election := time.Second
	at := func(d time.Duration) time.Time { return elected.Add(d) }
	// heard gives since when each peer has been heard from (absent: not now).
	heard := func(since map[uint64]time.Time) func(uint64) time.Time {
		return func(id uint64) time.Time { return since[id] }
	}
	always := at(-time.Hour)
	for _, tc := range []struct {
		name   string
		start  time.Time
		lead   uint64
		voters []uint64
		since  map[uint64]time.Time
		want   error
	}{
		{"started during the election that lost it", at(-1500 * time.Millisecond), a, []uint64{self, a, b}, nil, ErrTimeoutDueToLeaderFail},
		{"started just before the new leader took over", at(-time.Millisecond), self, []uint64{self, a, b}, nil, ErrTimeoutDueToLeaderFail},
		{"started before the election, no leader now", at(-time.Second), 0, []uint64{self, a, b}, nil, ErrTimeoutDueToLeaderFail},
		{"started more than two election timeouts before the leader took over", at(-2500 * time.Millisecond), a, []uint64{self, a, b}, map[uint64]time.Time{a: always}, ErrTimeout},
		{"started under a leader heard from throughout", at(time.Minute), a, []uint64{self, a, b}, map[uint64]time.Time{a: always}, ErrTimeout},
		{"started under a leader not heard from now", at(time.Minute), a, []uint64{self, a, b}, map[uint64]time.Time{b: always}, ErrTimeoutDueToConnectionLost},
		{"started under a leader heard from again only since", at(time.Minute), a, []uint64{self, a, b}, map[uint64]time.Time{a: at(time.Minute + time.Second), b: always}, ErrTimeoutDueToConnectionLost},
		{"no leader now", at(time.Minute), 0, []uint64{self, a, b}, nil, ErrTimeout},
		{"leader alone", at(time.Minute), self, []uint64{self}, nil, ErrTimeout},
		{"leader heard from one peer of two", at(time.Minute), self, []uint64{self, a, b}, map[uint64]time.Time{b: always}, ErrTimeout},
		{"leader heard from no peer throughout", at(time.Minute), self, []uint64{self, a, b}, map[uint64]time.Time{a: at(time.Minute + time.Second)}, ErrTimeoutDueToConnectionLost},
		{"leader of five heard from one peer", at(time.Minute), self, []uint64{self, a, b, c, d}, map[uint64]time.Time{a: always}, ErrTimeoutDueToConnectionLost},
		{"leader of five heard from two peers", at(time.Minute), self, []uint64{self, a, b, c, d}, map[uint64]time.Time{a: always, d: always}, ErrTimeout},
	} {
		got := timeoutError(proposalTimeout{start: tc.start, elected: elected, election: election,
			self: self, lead: tc.lead, voters: tc.voters, activeSince: heard(tc.since)})
		if got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

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

// TestForwardedLoss: proposals forwarded to a leader reported gone are
// told they are lost once an entry of a later term is applied, not before;
// those forwarded to another leader, or at another term, are not.
func TestForwardedLoss(t *testing.T) {
	var f forwardedLoss
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	toA := f.lost(0xa, 2)
	if f.lost(0xa, 2) != toA {
		t.Fatal("two proposals to the same leader and term got different channels")
	}
	f.leaderGone(0xb, 2) // not the leader proposals went to
	f.applied(3)
	if closed(toA) {
		t.Fatal("lost after another leader was reported gone")
	}
	f.leaderGone(0xa, 2)
	late := f.lost(0xa, 2) // forwarded before the report, registered after it
	f.applied(2)
	if closed(toA) || closed(late) {
		t.Fatal("lost before an entry of a later term was applied")
	}
	toC := f.lost(0xc, 3)
	f.applied(3)
	if !closed(toA) || !closed(late) {
		t.Fatal("not lost after an entry of a later term was applied")
	}
	if closed(toC) {
		t.Fatal("a proposal to the new leader was told it is lost")
	}
}
