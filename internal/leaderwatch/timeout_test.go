package leaderwatch

import (
	"testing"
	"time"
)

// TestTimeoutCause drives each condition of ProposalTimeout.Cause: when the
// proposal started against when the leader took over, who leads, and
// since when the peers have been heard from.
func TestTimeoutCause(t *testing.T) {
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
		want   TimeoutCause
	}{
		{"started during the election that lost it", at(-1500 * time.Millisecond), a, []uint64{self, a, b}, nil, LeaderFailed},
		{"started just before the new leader took over", at(-time.Millisecond), self, []uint64{self, a, b}, nil, LeaderFailed},
		{"started before the election, no leader now", at(-time.Second), 0, []uint64{self, a, b}, nil, LeaderFailed},
		{"started more than two election timeouts before the leader took over", at(-2500 * time.Millisecond), a, []uint64{self, a, b}, map[uint64]time.Time{a: always}, TimedOut},
		{"started under a leader heard from throughout", at(time.Minute), a, []uint64{self, a, b}, map[uint64]time.Time{a: always}, TimedOut},
		{"started under a leader not heard from now", at(time.Minute), a, []uint64{self, a, b}, map[uint64]time.Time{b: always}, ConnectionLost},
		{"started under a leader heard from again only since", at(time.Minute), a, []uint64{self, a, b}, map[uint64]time.Time{a: at(time.Minute + time.Second), b: always}, ConnectionLost},
		{"no leader now", at(time.Minute), 0, []uint64{self, a, b}, nil, TimedOut},
		{"leader alone", at(time.Minute), self, []uint64{self}, nil, TimedOut},
		{"leader heard from one peer of two", at(time.Minute), self, []uint64{self, a, b}, map[uint64]time.Time{b: always}, TimedOut},
		{"leader heard from no peer throughout", at(time.Minute), self, []uint64{self, a, b}, map[uint64]time.Time{a: at(time.Minute + time.Second)}, ConnectionLost},
		{"leader of five heard from one peer", at(time.Minute), self, []uint64{self, a, b, c, d}, map[uint64]time.Time{a: always}, ConnectionLost},
		{"leader of five heard from two peers", at(time.Minute), self, []uint64{self, a, b, c, d}, map[uint64]time.Time{a: always, d: always}, TimedOut},
	} {
		got := ProposalTimeout{Start: tc.start, Elected: elected, Election: election,
			Self: self, Lead: tc.lead, Voters: tc.voters, ActiveSince: heard(tc.since)}.Cause()
		if got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
