package server

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
)

// leaderGone is told (transport.OnPeerGone) that a peer's process is gone:
// its stream to this member broke and its peer port refuses connections.
// When the peer is this member's leader, the voters need not wait out the
// election timeout to notice: they campaign at once, as a leader's
// transferee does. raft's safety does not depend on when an election
// starts; only its cost does, and a leader whose port refuses connections
// serves no one. A partition or a paused leader resets nothing and still
// waits for the timeout.
//
// So that two voters do not split the votes, they go one after another in
// the order of their IDs, a campaignStagger apart; each campaigns only if no
// leader has been elected by its turn. A voter whose log is behind loses
// its election to the next one's.
func (s *Server) leaderGone(id uint64) {
	st := s.node.Status()
	if st.Lead != id || st.RaftState != raft.StateFollower || s.stopping() {
		return
	}
	s.forwarded.leaderGone(id, st.GetTerm())
	var order []uint64
	for _, m := range s.voters() {
		if m.ID != id {
			order = append(order, m.ID)
		}
	}
	slices.Sort(order)
	turn := slices.Index(order, s.id)
	if turn < 0 {
		return // a learner does not campaign
	}
	wait := time.Duration(turn) * s.campaignStagger()
	s.log.Warn("the leader's process is gone (its stream broke and its peer port refuses connections); campaigning without waiting for the election timeout",
		"leader", fmt.Sprintf("%x", id), "term", st.GetTerm(), "after", wait.String())
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-s.stopc:
			return
		}
	}
	s.node.CampaignAsTransferee(id)
}

// campaignStagger is how long a voter waits for the one before it in
// leaderGone's order to be elected: two heartbeats, time for a round of
// votes and the first append.
func (s *Server) campaignStagger() time.Duration { return 2 * s.cfg.HeartbeatInterval }

// forwardedLoss tells the proposals a follower forwarded to a leader whose
// process is gone that they will not be applied, as soon as that is known,
// rather than let them wait for their timeout. Once this member applies an
// entry of a later term, its new leader has committed everything of the
// gone leader's that it ever will: a proposal forwarded to the gone leader
// and not applied by then is lost (short of a copy of it still in flight to
// a restarted member, which the error etcd answers, "possibly due to
// previous leader failure", allows for).
type forwardedLoss struct {
	// cur are the proposals forwarded under the leader and term of the
	// last one (read without the lock, for every proposal forwarded).
	cur atomic.Pointer[lossEpoch]
	// gone are those forwarded to a leader reported gone, until a later
	// term's entry is applied; goneTerm its term, 0 when there is none (read
	// at every entry applied).
	mu       sync.Mutex
	gone     *lossEpoch
	goneTerm atomic.Uint64
}

type lossEpoch struct {
	lead, term uint64
	lost       chan struct{}
}

// lost returns a channel closed when proposals forwarded to lead at term
// are known to be lost.
func (f *forwardedLoss) lost(lead, term uint64) <-chan struct{} {
	if c := f.cur.Load(); c != nil && c.lead == lead && c.term == term {
		return c.lost
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if g := f.gone; g != nil && g.lead == lead && g.term == term {
		return g.lost
	}
	c := f.cur.Load()
	if c == nil || c.lead != lead || c.term != term {
		c = &lossEpoch{lead: lead, term: term, lost: make(chan struct{})}
		f.cur.Store(c)
	}
	return c.lost
}

// leaderGone marks the proposals forwarded to lead at term.
func (f *forwardedLoss) leaderGone(lead, term uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.cur.Load(); c != nil && c.lead == lead && c.term == term {
		if f.gone != nil {
			close(f.gone.lost) // an earlier leader's: a later term has begun
		}
		f.gone = c
		f.cur.Store(nil)
		f.goneTerm.Store(term)
	}
}

// applied is told the term of each entry applied.
func (f *forwardedLoss) applied(term uint64) {
	if t := f.goneTerm.Load(); t == 0 || term <= t {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone != nil && term > f.gone.term {
		close(f.gone.lost)
		f.gone = nil
		f.goneTerm.Store(0)
	}
}
