// Package confhistory is raft's configuration (ConfState) as of each conf
// change a member applied since its last snapshot, so that a snapshot sent
// to a peer can say which members the db sent with it knows of.
package confhistory

import (
	"sync"

	"go.etcd.io/raft/v3/raftpb"
)

// History is the configurations by index. The zero value is empty.
type History struct {
	// Applying is held from the db write of a conf change to its record
	// here, and by whoever opens a db to describe it: a db that has the
	// change has it recorded too.
	Applying sync.Mutex

	mu      sync.Mutex
	changes []entry // by index, ascending
	seen    uint64  // every conf change at or below it is recorded
}

type entry struct {
	index uint64
	cs    *raftpb.ConfState
}

// Reset starts the history again at index (a snapshot loaded or installed).
func (h *History) Reset(index uint64, cs *raftpb.ConfState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changes = append(h.changes[:0], entry{index, cs})
	h.seen = index
}

// See notes that the entry at index is being applied: a conf change there
// is recorded before a db that has it can be opened (Applying).
func (h *History) See(index uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = max(h.seen, index)
}

// Record notes the configuration after the conf change at index. A change
// replayed at or below the last one known (a restart replays the log from
// the snapshot) replaces nothing.
func (h *History) Record(index uint64, cs *raftpb.ConfState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.changes); n > 0 && h.changes[n-1].index >= index {
		return
	}
	h.changes = append(h.changes, entry{index, cs})
}

// Forget drops what no snapshot from index on needs: every change but the
// last one at or below index.
func (h *History) Forget(index uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := 0
	for i+1 < len(h.changes) && h.changes[i+1].index <= index {
		i++
	}
	h.changes = h.changes[i:]
}

// At returns the configuration as of index, false if the history does not
// reach back that far or not yet up to it (a restart replaying its log to a
// db that is ahead of it).
func (h *History) At(index uint64) (*raftpb.ConfState, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if index > h.seen {
		return nil, false
	}
	for i := len(h.changes) - 1; i >= 0; i-- {
		if h.changes[i].index <= index {
			return h.changes[i].cs, true
		}
	}
	return nil, false
}
