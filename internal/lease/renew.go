package lease

import "time"

// Renew (keepalive) restarts lease id's clock with its full TTL and returns
// that TTL. Only the primary renews: elsewhere it returns ErrNotPrimary and
// the server forwards the keepalive to the leader. A lease that has expired
// is not renewed (ErrLeaseNotFound): its revoke is on its way.
//
// The primary renews only if a round begun less than confirmedWithin ago
// confirmed its leadership (else ErrNotConfirmed, and the server runs a
// round): the server passes the time after such a round within which a
// member elected meanwhile, unaware of the renewal, would still honour it.
//
// A checkpointed remaining TTL no longer holds once the lease is renewed:
// the primary drops it at once and queues a checkpoint clearing it, which
// the next CheckpointsDue returns for the server to propose.
func (l *Lessor) Renew(id int64, confirmedWithin time.Duration) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return 0, ErrNotPrimary
	}
	ls, ok := l.leases[id]
	if !ok {
		return 0, ErrLeaseNotFound
	}
	now := l.cfg.Now()
	if !l.confirmedWithinLocked(confirmedWithin, now) {
		return 0, ErrNotConfirmed
	}
	if !now.Before(ls.expiry) {
		return 0, ErrLeaseNotFound
	}
	if ls.remaining > 0 {
		ls.remaining = 0
		if !ls.clearQueued {
			ls.clearQueued = true
			l.clears = append(l.clears, id)
		}
	}
	l.startClockLocked(ls, now)
	l.renewed.Add(1)
	return ls.ttl, nil
}
