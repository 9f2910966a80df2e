package lease

import (
	"math"
	"time"
)

// Lease is a copy of a lease's state at the time it was taken.
type Lease struct {
	ID int64
	// TTL is the granted TTL in seconds (raised to the minimum TTL).
	TTL int64
	// RemainingTTL is the checkpointed remaining TTL in seconds, 0 if none:
	// a new primary starts the lease's clock from it instead of from TTL.
	RemainingTTL int64
	// Expiry is when the lease expires; zero when this lessor is not
	// primary (the lease then lives until a revoke is applied).
	Expiry time.Time
}

// TTLInfo answers TimeToLive.
type TTLInfo struct {
	ID int64
	// GrantedTTL is the TTL the lease was granted with, in seconds.
	GrantedTTL int64
	// TTL is the remaining time to live in whole seconds (truncated, as etcd
	// reports it), 0 once expired.
	TTL int64
	// Keys attached to the lease, sorted; nil unless asked for.
	Keys [][]byte
}

// Checkpoint records a lease's remaining TTL in the log
// (etcdserverpb.LeaseCheckpoint); RemainingTTL 0 clears a previous one.
type Checkpoint struct {
	ID           int64
	RemainingTTL int64
}

// The two heaps a lease can sit in; each lease keeps its key and position
// in each.
const (
	expirySlot     = iota // ordered by the next time Tick looks at the lease
	checkpointSlot        // ordered by the lease's next checkpoint
	numSlots
)

// lease is the lessor's record of one lease; guarded by Lessor.mu.
type lease struct {
	id        int64
	ttl       int64 // seconds
	remaining int64 // checkpointed remaining TTL in seconds, 0 if none
	expiry    time.Time

	index [numSlots]int // heap positions, -1 when absent

	clearQueued bool // a checkpoint clearing remaining is waiting to be proposed
}

func newLease(id, ttl, remaining int64) *lease {
	return &lease{id: id, ttl: ttl, remaining: remaining, index: [numSlots]int{-1, -1}}
}

// clockTTL is the TTL the lease's clock restarts from: the checkpointed
// remaining TTL if there is one, else the granted TTL.
func (l *lease) clockTTL() int64 {
	if l.remaining > 0 {
		return l.remaining
	}
	return l.ttl
}

// snapshot copies the lease's state.
func (l *lease) snapshot() Lease {
	return Lease{ID: l.id, TTL: l.ttl, RemainingTTL: l.remaining, Expiry: l.expiry}
}

// seconds converts n seconds to a Duration, saturating instead of
// overflowing for TTLs that a foreign lease bucket may hold.
func seconds(n int64) time.Duration {
	if n > math.MaxInt64/int64(time.Second) {
		return math.MaxInt64
	}
	return time.Duration(n) * time.Second
}

// addSat adds two non-negative durations, saturating.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
