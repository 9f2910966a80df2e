package lease

// Tick returns the leases that have expired, for the server to propose
// their revocation; it is meant to be called every TickInterval and returns
// nothing unless the lessor is primary. A lease it returns is returned again
// only after Config.RetryInterval, if it has not been revoked by then (its
// revoke may still be in flight), unless Promote restarts its clock. At most
// RevokeRate*TickInterval leases are returned per call, earliest expiry
// first; the rest wait for the next calls.
func (l *Lessor) Tick() []Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return nil
	}
	now := l.cfg.Now()
	nowKey, retry := l.key(now), l.key(now.Add(l.cfg.RetryInterval))
	budget := l.cfg.revokesPerTick()
	var out []Lease
	for len(out) < budget {
		ls, at := l.expiry.peek()
		// A lease's key is its expiry, or a retry time after it, so a key
		// that has passed means the lease has expired.
		if ls == nil || at > nowKey {
			break
		}
		if out == nil {
			out = make([]Lease, 0, min(budget, l.expiry.Len()))
		}
		out = append(out, ls.snapshot())
		l.expiry.set(ls, retry)
	}
	return out
}
