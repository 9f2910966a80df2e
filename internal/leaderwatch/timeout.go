package leaderwatch

import "time"

// ProposalTimeout is what a member knows, when a proposal times out, of
// what may have lost it.
type ProposalTimeout struct {
	Start    time.Time     // when the proposal started
	Elected  time.Time     // when the member learnt of its current (or last) leader
	Election time.Duration // the election timeout
	Self     uint64
	Lead     uint64   // the leader now; 0: none
	Voters   []uint64 // the voting members, Self included
	// ActiveSince is since when a peer's messages have reached the member
	// without a break; zero while they do not.
	ActiveSince func(peer uint64) time.Time
}

// TimeoutCause is what most likely lost a proposal that timed out; etcd
// answers each with its own error.
type TimeoutCause int

const (
	TimedOut       TimeoutCause = iota // etcd's "request timed out"
	LeaderFailed                       // "request timed out, possibly due to previous leader failure"
	ConnectionLost                     // "request timed out, possibly due to connection lost"
)

// Cause is the cause of a proposal that timed out, as etcd judges it:
//   - it started in the two election timeouts (longer than an election
//     takes) before the current leader took over: it was likely lost with
//     the previous leader, LeaderFailed;
//   - the member leads and has not heard from a quorum of voters without a
//     break since the proposal started, or follows a leader it has not heard
//     from without a break since then: ConnectionLost;
//   - else (no leader now, among others) TimedOut.
func (p ProposalTimeout) Cause() TimeoutCause {
	if p.Start.Before(p.Elected) && p.Start.After(p.Elected.Add(-2*p.Election)) {
		return LeaderFailed
	}
	heardSince := func(peer uint64) bool {
		t := p.ActiveSince(peer)
		return !t.IsZero() && !t.After(p.Start)
	}
	switch p.Lead {
	case 0:
		return TimedOut
	case p.Self:
		heard := 0
		for _, id := range p.Voters {
			if id == p.Self || heardSince(id) {
				heard++
			}
		}
		if heard <= len(p.Voters)/2 {
			return ConnectionLost
		}
		return TimedOut
	default:
		if !heardSince(p.Lead) {
			return ConnectionLost
		}
		return TimedOut
	}
}
