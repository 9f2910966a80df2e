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

// TestProposalLostWithItsLeader: a follower forwards a proposal to a
// leader that has just stopped; the others elect a new leader, and the
// proposal, lost, times out with etcd's "possibly due to previous leader
// failure" (etcd 3.7.3 answers so a put sent to a follower right after its
// leader was killed). An election takes less than the two election
// timeouts that answer allows for, but for a rare unlucky draw of raft's
// randomized timeouts (or a starved test process): then the answer is the
// plain timeout, as etcd's would be.
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	before := time.Now()
	_, err := follower.Propose(ctx, &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k")}})
	if l := follower.Leader(); l == 0 || l == ss[lead].ID() {
		t.Fatalf("the follower's leader is %x, want a new one", l)
	}
	window := 2 * follower.cfg.ElectionTimeout
	took := follower.leaderless.Elected().Sub(before)
	switch {
	case took < window:
		if err != ErrTimeoutDueToLeaderFail {
			t.Errorf("propose, a new leader %v after it started: %v, want %v", took, err, ErrTimeoutDueToLeaderFail)
		}
	case took > window+50*time.Millisecond: // a margin: the proposal started a little after before
		t.Logf("the election took %v, longer than %v", took, window)
		if err != ErrTimeout {
			t.Errorf("propose, a new leader %v after it started: %v, want %v", took, err, ErrTimeout)
		}
	}
}
