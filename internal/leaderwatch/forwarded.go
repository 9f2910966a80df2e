package leaderwatch

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Forwarded tells the proposals a follower forwarded to a leader whose
// process is gone that they will not be applied, as soon as that is known,
// rather than let them wait for their timeout. Once the member applies an
// entry of a later term, its new leader has committed everything of the
// gone leader's that it ever will: a proposal forwarded to the gone leader
// and not applied by then is lost (short of a copy of it still in flight to
// a restarted member, which the error etcd answers, "possibly due to
// previous leader failure", allows for).
type Forwarded struct {
	// cur are the proposals forwarded under the leader and term of the
	// last one (read without the lock, for every proposal forwarded).
	cur atomic.Pointer[lossEpoch]
	mu  sync.Mutex
	// earlier are the last epochs cur held before, newest last: the report
	// of a gone leader may come after this member has forwarded proposals
	// to the next one.
	earlier []*lossEpoch
	// gone are the epochs of leaders reported gone, until an entry of a
	// later term than theirs is applied; goneTerm the lowest of their
	// terms, 0 when there is none (read at every entry applied).
	gone     []*lossEpoch
	goneTerm atomic.Uint64
	// appliedTerm is the term of the last entry applied: the report of a
	// gone leader may come after the new leader's first entry was applied.
	appliedTerm atomic.Uint64
}

// keptEpochs bounds Forwarded.earlier: as many leader changes as a
// proposal's timeout may see.
const keptEpochs = 8

type lossEpoch struct {
	lead, term uint64
	lost       chan struct{}
}

func (e *lossEpoch) is(lead, term uint64) bool { return e.lead == lead && e.term == term }

// Lost returns a channel closed when proposals forwarded to lead at term
// are known to be lost.
func (f *Forwarded) Lost(lead, term uint64) <-chan struct{} {
	if c := f.cur.Load(); c != nil && c.is(lead, term) {
		return c.lost
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range slices.Concat(f.gone, f.earlier) {
		if e.is(lead, term) {
			return e.lost
		}
	}
	c := f.cur.Load()
	if c == nil || !c.is(lead, term) {
		if c != nil {
			f.earlier = append(f.earlier, c)
			if len(f.earlier) > keptEpochs {
				f.earlier = slices.Delete(f.earlier, 0, len(f.earlier)-keptEpochs)
			}
		}
		c = &lossEpoch{lead: lead, term: term, lost: make(chan struct{})}
		f.cur.Store(c)
	}
	return c.lost
}

// LeaderGone marks the proposals forwarded to lead, whose process is gone,
// at whatever term they were: this member may already have moved to a later
// term (another voter's campaign reached it first), and they are lost all
// the same. term is the term at which this member still follows lead, 0
// when it no longer does: while it does, proposals forwarded to lead after
// the report are lost too (the report may come before the first of them).
func (f *Forwarded) LeaderGone(lead, term uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	toLead := func(e *lossEpoch) bool { return e.lead == lead }
	if c := f.cur.Load(); c != nil && toLead(c) {
		f.gone = append(f.gone, c)
		f.cur.Store(nil)
	}
	for _, e := range f.earlier {
		if toLead(e) {
			f.gone = append(f.gone, e)
		}
	}
	f.earlier = slices.DeleteFunc(f.earlier, toLead)
	if term != 0 && !slices.ContainsFunc(f.gone, func(e *lossEpoch) bool { return e.is(lead, term) }) {
		f.gone = append(f.gone, &lossEpoch{lead: lead, term: term, lost: make(chan struct{})})
	}
	// goneTerm is set before appliedTerm is read, as Applied sets
	// appliedTerm before it reads goneTerm: of an entry applied meanwhile,
	// one of the two sees the other's, and closes what it must.
	f.closeGoneBefore(0)
	f.closeGoneBefore(f.appliedTerm.Load())
}

// Applied is told the term of each entry applied, in order.
func (f *Forwarded) Applied(term uint64) {
	if term > f.appliedTerm.Load() {
		f.appliedTerm.Store(term) // before goneTerm is read (see LeaderGone)
	}
	if t := f.goneTerm.Load(); t == 0 || term <= t {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closeGoneBefore(term)
}

// closeGoneBefore tells the proposals forwarded to gone leaders that they
// are lost where an entry of term, later than theirs, was applied (none for
// 0), and sets goneTerm for those left. f.mu is held.
func (f *Forwarded) closeGoneBefore(term uint64) {
	lowest := uint64(0)
	f.gone = slices.DeleteFunc(f.gone, func(e *lossEpoch) bool {
		if term > e.term {
			close(e.lost)
			return true
		}
		if lowest == 0 || e.term < lowest {
			lowest = e.term
		}
		return false
	})
	f.goneTerm.Store(lowest)
}

// CampaignTurn is the turn of voter self to campaign when the leader gone's
// process is gone: the voters but gone, in the order of their IDs, take
// turns, so that their votes do not split. -1 if self is not among them.
func CampaignTurn(voters []uint64, gone, self uint64) int {
	order := slices.DeleteFunc(slices.Clone(voters), func(id uint64) bool { return id == gone })
	slices.Sort(order)
	return slices.Index(order, self)
}
