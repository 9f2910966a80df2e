package store

import (
	"sync/atomic"
	"time"
)

// Stats are what a store counts for a member's metrics: operation counts,
// compaction figures and, through the optional hooks, durations. A member
// passes one Stats to every store it opens (Config.Stats), so that the
// counts outlive a store replaced by a snapshot. Hooks are set before the
// first store opens and must be cheap and safe for concurrent use.
type Stats struct {
	// Operations seen: puts, delete ranges and ranges (also those inside a
	// transaction), and the transactions of more than one operation.
	Puts, Deletes, Ranges, Txns atomic.Int64
	// PutBytes is the size of the keys and values put.
	PutBytes atomic.Int64
	// EventsSent counts the events handed to watch streams.
	EventsSent atomic.Int64
	// CompactedKeys counts the revisions compactions removed from the
	// backend; LastCompaction is when the last one finished (unix seconds).
	CompactedKeys, LastCompaction atomic.Int64

	// OnCommit is told how long each backend commit took, OnBoltCommit how
	// long bbolt spent in it rebalancing, spilling and writing.
	OnCommit     func(time.Duration)
	OnBoltCommit func(rebalance, spill, write time.Duration)
	// OnIndexCompaction, OnCompactionBatch and OnCompaction are told how
	// long a compaction took to compact the index (a batch of keys at a
	// time, as etcd's takes a key at a time), how long each of its backend
	// batches held the writers, and how long it took in all.
	OnIndexCompaction, OnCompactionBatch, OnCompaction func(time.Duration)
}

// Operations counts the operations seen so far: puts, deletes, ranges
// (also those inside a transaction) and transactions.
func (st *Stats) Operations() int64 {
	return st.Puts.Load() + st.Deletes.Load() + st.Ranges.Load() + st.Txns.Load()
}

// since tells hook, if set, the time elapsed since start.
func since(hook func(time.Duration), start time.Time) {
	if hook != nil {
		hook(time.Since(start))
	}
}

// opCounts are the operations of one transaction, added to Stats at its end.
type opCounts struct {
	puts, deletes, ranges int64
	putBytes              int64
	keys                  int64 // live keys added (less those deleted)
}

// addTo adds the counts to st and keys; a transaction of more than one
// operation counts as a txn.
func (c *opCounts) addTo(st *Stats, keys *atomic.Int64) {
	if c.puts > 0 {
		st.Puts.Add(c.puts)
		st.PutBytes.Add(c.putBytes)
	}
	if c.deletes > 0 {
		st.Deletes.Add(c.deletes)
	}
	if c.ranges > 0 {
		st.Ranges.Add(c.ranges)
	}
	if c.keys != 0 {
		keys.Add(c.keys)
	}
	if c.puts+c.deletes+c.ranges > 1 {
		st.Txns.Add(1)
	}
}

// Keys returns the number of keys that exist at the current revision.
func (s *Store) Keys() int64 { return s.keys.Load() }

// WatchCounts returns the open watch streams, their watchers, the
// watchers catching up from the history (slow), and the events handed to
// the streams that their readers have not yet taken (see EventsReceived).
func (s *Store) WatchCounts() (streams, watchers, slow, pending int64) {
	h := s.watch
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.streams, h.watchers, int64(len(h.unsynced)), h.pending.Load()
}
