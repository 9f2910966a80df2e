package lease

import (
	"fmt"

	"github.com/cairnkv/cairn/pkg/store"
)

// Grant creates lease id with ttl seconds, raised to the minimum TTL, and
// records it in w's batch. It returns the lease as granted. id must not be
// 0 (the server picks an ID before proposing). On the primary the lease's
// clock starts now.
func (l *Lessor) Grant(w *store.WriteTxn, id, ttl int64) (Lease, error) {
	if id == 0 {
		return Lease{}, ErrLeaseNotFound
	}
	if ttl > MaxLeaseTTL {
		return Lease{}, ErrLeaseTTLTooLarge
	}
	ttl = max(ttl, l.cfg.MinTTL)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.leases[id]; ok {
		return Lease{}, ErrLeaseExists
	}
	if err := w.PutLease(store.LeaseRecord{ID: id, TTL: ttl}); err != nil {
		return Lease{}, fmt.Errorf("grant lease %016x: %w", id, err)
	}
	ls := newLease(id, ttl, 0)
	l.leases[id] = ls
	l.granted.Add(1)
	if l.primary {
		l.startClockLocked(ls, l.cfg.Now())
	}
	return ls.snapshot(), nil
}

// Revoke deletes lease id and, in w's one revision, every key attached to
// it (in key order, so that every member writes the same sub-revisions).
func (l *Lessor) Revoke(w *store.WriteTxn, id int64) error {
	l.mu.RLock()
	_, ok := l.leases[id]
	l.mu.RUnlock()
	if !ok {
		return ErrLeaseNotFound
	}
	if _, err := w.DeleteLease(id); err != nil {
		return fmt.Errorf("revoke lease %016x: delete its keys: %w", id, err)
	}
	if err := w.DeleteLeaseRecord(id); err != nil {
		return fmt.Errorf("revoke lease %016x: %w", id, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if ls, ok := l.leases[id]; ok {
		delete(l.leases, id)
		l.expiry.remove(ls)
		l.cps.remove(ls)
		ls.clearQueued = false
	}
	l.revoked.Add(1)
	return nil
}

// Checkpoint applies a lease checkpoint: it records remainingTTL seconds
// (0: none) as the lease's remaining TTL, in memory and in w's batch, so
// that a new primary restarts the lease's clock from it. A checkpoint of a
// lease that no longer exists is ignored, as etcd does.
func (l *Lessor) Checkpoint(w *store.WriteTxn, id, remainingTTL int64) error {
	remainingTTL = max(remainingTTL, 0)
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, ok := l.leases[id]
	if !ok {
		return nil
	}
	if err := w.PutLease(store.LeaseRecord{ID: id, TTL: ls.ttl, RemainingTTL: remainingTTL}); err != nil {
		return fmt.Errorf("checkpoint lease %016x: %w", id, err)
	}
	ls.remaining = remainingTTL
	return nil
}
