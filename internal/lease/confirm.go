package lease

import "time"

// A leader must not act on its leadership as it stood before a disk stall
// or a partition: meanwhile another member may have been elected and have
// renewed the leases this one sees expire. So the primary revokes a lease
// only after a round that confirmed its leadership (a ReadIndex round
// acknowledged by a quorum) started after the lease expired, and answers a
// keep-alive only while such a confirmation is recent. The server runs the
// rounds; the lessor keeps their outcome, tied to one term of primacy
// (from a Promote to the next Demote) so that a round that began in an
// earlier term counts for nothing.

// A Confirmation is a round, begun at At, that may confirm the primary's
// leadership.
type Confirmation struct {
	term uint64
	At   time.Time
}

// newTermLocked starts a term of primacy (or of its absence) with nothing
// confirmed.
func (l *Lessor) newTermLocked() {
	l.term++
	l.confirmed = time.Time{}
}

// StartConfirmation notes the start of a confirmation round, before the
// server starts it.
func (l *Lessor) StartConfirmation() Confirmation {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return Confirmation{term: l.term, At: l.cfg.Now()}
}

// Confirmed records that c's round confirmed the leadership; it counts
// only if the lessor is still primary in the term c began in.
func (l *Lessor) Confirmed(c Confirmation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.primary && c.term == l.term && c.At.After(l.confirmed) {
		l.confirmed = c.At
	}
}

// ConfirmedWithin reports whether the primary's leadership was confirmed
// by a round begun less than d ago.
func (l *Lessor) ConfirmedWithin(d time.Duration) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.primary && !l.confirmed.IsZero() && l.cfg.Now().Sub(l.confirmed) < d
}

// ExpiredBefore reports whether lease id, on a lessor still primary in the
// term c began in, had expired by the start of c's round: a lease that the
// server may revoke once c's round has confirmed its leadership. A lease
// renewed since, or whose clock a new term restarted, is not.
func (l *Lessor) ExpiredBefore(id int64, c Confirmation) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	ls, ok := l.leases[id]
	return ok && l.primary && c.term == l.term && !ls.expiry.After(c.At)
}
