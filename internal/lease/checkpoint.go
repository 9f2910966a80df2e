package lease

import "time"

// CheckpointsDue returns the lease checkpoints the primary should propose
// now, at most Config.CheckpointBatch of them; nothing on a lessor that is
// not primary. First come the checkpoints clearing a remaining TTL that
// Renew dropped; then, for each lease whose TTL outlives the checkpoint
// interval and that has not been renewed for an interval, its remaining TTL
// in whole seconds rounded up. A lease is checkpointed again every interval
// for as long as it has more than an interval left.
func (l *Lessor) CheckpointsDue() []Checkpoint {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return nil
	}
	batch := l.cfg.CheckpointBatch
	var out []Checkpoint
	n := 0
	for ; n < len(l.clears) && len(out) < batch; n++ {
		if ls, ok := l.leases[l.clears[n]]; ok && ls.clearQueued {
			ls.clearQueued = false
			out = append(out, Checkpoint{ID: ls.id})
		}
	}
	l.clears = l.clears[:copy(l.clears, l.clears[n:])]

	now := l.cfg.Now()
	nowKey, interval := l.key(now), l.cfg.CheckpointInterval
	next := l.key(now.Add(interval))
	for len(out) < batch {
		ls, at := l.cps.peek()
		if ls == nil || at > nowKey {
			break
		}
		left := ls.expiry.Sub(now)
		if left > interval {
			l.cps.set(ls, next)
		} else {
			l.cps.remove(ls)
		}
		if left <= 0 {
			continue // expired: its revoke is Tick's business
		}
		remaining := int64((left + time.Second - 1) / time.Second)
		if remaining >= ls.ttl {
			continue // no time lost yet (the primary extended it)
		}
		out = append(out, Checkpoint{ID: ls.id, RemainingTTL: remaining})
	}
	return out
}
