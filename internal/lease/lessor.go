package lease

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnkv/cairn/pkg/store"
)

// Lessor holds the leases of a member. Its methods are safe for concurrent
// use; the apply-side ones (Grant, Revoke, Checkpoint, Recover) must be
// called in log order by one caller, as the apply loop does.
type Lessor struct {
	cfg   Config
	epoch time.Time // heap keys are nanoseconds since it

	mu      sync.RWMutex
	s       *store.Store // the store whose lease bucket and keys we keep
	leases  map[int64]*lease
	primary bool
	expiry  leaseHeap // on the primary: every lease, by next expiry check
	cps     leaseHeap // on the primary: leases due a checkpoint
	clears  []int64   // leases whose checkpoint Renew cleared, to propose

	term      uint64    // counts Promotes and Demotes: confirmations of an older one do not count
	confirmed time.Time // start of the last round that confirmed this term's leadership (confirm.go)
	// confirmChanged is closed and replaced when confirmed or term changes.
	confirmChanged chan struct{}

	granted, revoked, renewed atomic.Int64 // Counts
}

// Counts returns the leases granted, revoked and renewed (by this member
// as the primary) since the lessor began.
func (l *Lessor) Counts() (granted, revoked, renewed int64) {
	return l.granted.Load(), l.revoked.Load(), l.renewed.Load()
}

// New returns a lessor, not primary, holding the leases recorded in s.
func New(s *store.Store, cfg Config) (*Lessor, error) {
	l := &Lessor{
		cfg:    cfg.withDefaults(),
		leases: make(map[int64]*lease),
		expiry: leaseHeap{slot: expirySlot},
		cps:    leaseHeap{slot: checkpointSlot},

		confirmChanged: make(chan struct{}),
	}
	l.epoch = l.cfg.Now()
	if err := l.Recover(s); err != nil {
		return nil, err
	}
	return l, nil
}

// Recover replaces every lease with those recorded in s's lease bucket, and
// makes s the store whose keys leases own: after a restart, or after a
// snapshot install replaced the store. TTLs below the minimum are raised to
// it. On the primary every lease's clock restarts from its remaining TTL.
func (l *Lessor) Recover(s *store.Store) error {
	recs, err := s.Leases()
	if err != nil {
		return fmt.Errorf("recover leases: %w", err)
	}
	leases := make(map[int64]*lease, len(recs))
	for _, r := range recs {
		leases[r.ID] = newLease(r.ID, max(r.TTL, l.cfg.MinTTL), max(r.RemainingTTL, 0))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.s = s
	l.leases = leases
	l.expiry.clear()
	l.cps.clear()
	l.clears = nil
	if l.primary {
		l.startClocksLocked(0)
	}
	return nil
}

// Promote makes the lessor primary, as its member has become raft leader:
// every lease expires extend after its remaining TTL (its checkpointed one,
// else its TTL) from now, so that clients have time to find the new leader.
// When there are at least RevokeRate leases, expiries are spread so that
// no more than RevokeRate leases expire in any second.
func (l *Lessor) Promote(extend time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.primary = true
	l.newTermLocked()
	l.startClocksLocked(max(extend, 0))
}

// Demote stops expiry tracking, as its member is no longer raft leader:
// leases live until a revoke is applied.
func (l *Lessor) Demote() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.primary = false
	l.newTermLocked()
	for _, ls := range l.leases {
		ls.expiry = time.Time{}
		ls.clearQueued = false
	}
	l.expiry.clear()
	l.cps.clear()
	l.clears = nil
}

// IsPrimary reports whether the lessor tracks expiry.
func (l *Lessor) IsPrimary() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.primary
}

// startClocksLocked restarts every lease's clock (see Promote).
func (l *Lessor) startClocksLocked(extend time.Duration) {
	now := l.cfg.Now()
	all := make([]*lease, 0, len(l.leases))
	for _, ls := range l.leases {
		ls.expiry = now.Add(addSat(seconds(ls.clockTTL()), extend))
		all = append(all, ls)
	}
	spread(all, l.cfg.RevokeRate)
	exps := make([]heapEntry, len(all))
	var cps []heapEntry
	cpAt := l.key(now.Add(l.cfg.CheckpointInterval))
	for i, ls := range all {
		exps[i] = heapEntry{at: l.key(ls.expiry), l: ls}
		if l.needsCheckpoint(addSat(seconds(ls.clockTTL()), extend)) {
			cps = append(cps, heapEntry{at: cpAt, l: ls})
		}
	}
	l.expiry.rebuild(exps)
	l.cps.rebuild(cps)
}

// key converts a time to a heap key: nanoseconds since the epoch
// (saturating, and on the monotonic clock when both times carry it).
func (l *Lessor) key(t time.Time) int64 { return int64(t.Sub(l.epoch)) }

// startClockLocked restarts one lease's clock from now with its clock TTL
// and schedules its next checkpoint.
func (l *Lessor) startClockLocked(ls *lease, now time.Time) {
	ttl := seconds(ls.clockTTL())
	ls.expiry = now.Add(ttl)
	l.expiry.set(ls, l.key(ls.expiry))
	if l.needsCheckpoint(ttl) {
		l.cps.set(ls, l.key(now.Add(l.cfg.CheckpointInterval)))
	} else {
		l.cps.remove(ls)
	}
}

// needsCheckpoint reports whether a lease with this much time left would
// outlive a checkpoint interval.
func (l *Lessor) needsCheckpoint(left time.Duration) bool {
	return l.cfg.CheckpointInterval > 0 && left > l.cfg.CheckpointInterval
}

// spread delays expiries, when there are at least rate leases, so that two
// consecutive expiries are at least 1/rate second apart: after an election
// the new leader then revokes at the rate it can, and no client loses a
// lease for want of time to renew it.
func spread(ls []*lease, rate int) {
	if len(ls) < rate {
		return
	}
	slices.SortFunc(ls, func(a, b *lease) int {
		if c := a.expiry.Compare(b.expiry); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	gap := time.Second / time.Duration(rate)
	for i := 1; i < len(ls); i++ {
		if earliest := ls[i-1].expiry.Add(gap); ls[i].expiry.Before(earliest) {
			ls[i].expiry = earliest
		}
	}
}

// Lookup returns a copy of the lease with this ID.
func (l *Lessor) Lookup(id int64) (Lease, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	ls, ok := l.leases[id]
	if !ok {
		return Lease{}, false
	}
	return ls.snapshot(), true
}

// CheckLease returns ErrLeaseNotFound unless lease id exists. The apply
// loop has puts checked with it (store.WriteTxn.CheckLeases): leases are
// granted and revoked only by applying the log (and restored from the db
// at a log position), so at the same entry every member answers the same.
func (l *Lessor) CheckLease(id int64) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if _, ok := l.leases[id]; !ok {
		return ErrLeaseNotFound
	}
	return nil
}

// Leases returns the IDs of every lease, in increasing order.
func (l *Lessor) Leases() []int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return slices.Sorted(maps.Keys(l.leases))
}

// TimeToLive reports a lease's granted and remaining TTL and, if withKeys,
// its keys. Only the primary knows the remaining TTL: elsewhere it returns
// ErrNotPrimary and the server forwards the request to the leader.
func (l *Lessor) TimeToLive(id int64, withKeys bool) (TTLInfo, error) {
	l.mu.RLock()
	if !l.primary {
		l.mu.RUnlock()
		return TTLInfo{}, ErrNotPrimary
	}
	ls, ok := l.leases[id]
	if !ok {
		l.mu.RUnlock()
		return TTLInfo{}, ErrLeaseNotFound
	}
	info := TTLInfo{ID: id, GrantedTTL: ls.ttl}
	if left := ls.expiry.Sub(l.cfg.Now()); left > 0 {
		info.TTL = int64(left / time.Second)
	}
	s := l.s
	l.mu.RUnlock()
	if withKeys {
		keys := s.LeaseKeys(id)
		slices.Sort(keys)
		info.Keys = make([][]byte, len(keys))
		for i, k := range keys {
			info.Keys[i] = []byte(k)
		}
	}
	return info, nil
}
