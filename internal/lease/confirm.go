package lease

import "time"

// A leader must not act on its leadership as it stood before a disk stall
// or a partition: meanwhile another member may have been elected and have
// renewed the leases this one sees expire. So the primary revokes a lease
// only after a round that confirmed its leadership (a ReadIndex round
// acknowledged by a quorum) started after the lease expired, and renews
// one only while such a round began recently enough that a member elected
// since would honour the renewal (see Renew). The server runs the rounds; the
// lessor keeps their outcome, tied to one term of primacy (from a Promote
// to the next Demote) so that a round that began in an earlier term counts
// for nothing.

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
	l.notifyConfirmationLocked()
}

// notifyConfirmationLocked wakes those waiting on ConfirmationChanged.
func (l *Lessor) notifyConfirmationLocked() {
	close(l.confirmChanged)
	l.confirmChanged = make(chan struct{})
}

// ConfirmationChanged returns a channel closed at the next change of what
// is confirmed: a round recorded by Confirmed, a Promote or a Demote.
func (l *Lessor) ConfirmationChanged() <-chan struct{} {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.confirmChanged
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
		l.notifyConfirmationLocked()
	}
}

// ConfirmedSince reports whether a round begun no earlier than c's start,
// in c's term of primacy, has confirmed the leadership; ErrNotPrimary once
// that term has ended.
func (l *Lessor) ConfirmedSince(c Confirmation) (bool, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if !l.primary || c.term != l.term {
		return false, ErrNotPrimary
	}
	return !l.confirmed.IsZero() && !l.confirmed.Before(c.At), nil
}

// confirmedWithinLocked reports whether the leadership was confirmed by a
// round begun less than d before now.
func (l *Lessor) confirmedWithinLocked(d time.Duration, now time.Time) bool {
	return !l.confirmed.IsZero() && now.Sub(l.confirmed) < d
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
