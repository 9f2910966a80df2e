package store

import (
	"slices"
	"sync"
)

// leaseIndex tracks which live keys are attached to which lease, so that a
// lease's keys can be deleted together and listed.
type leaseIndex struct {
	mu     sync.RWMutex
	keys   map[int64]map[string]struct{}
	leased map[string]int64 // key → its lease, for keys that have one
}

func newLeaseIndex() *leaseIndex {
	return &leaseIndex{keys: make(map[int64]map[string]struct{}), leased: make(map[string]int64)}
}

// attach records that key now belongs to lease (0: to none).
func (li *leaseIndex) attach(key string, lease int64) {
	li.mu.Lock()
	defer li.mu.Unlock()
	li.detachLocked(key)
	if lease == 0 {
		return
	}
	set := li.keys[lease]
	if set == nil {
		set = make(map[string]struct{})
		li.keys[lease] = set
	}
	set[key] = struct{}{}
	li.leased[key] = lease
}

// restore replays a revision of key at a rebuild: a put attached to lease,
// or a deletion (tombstone). It allocates nothing for a key that has no
// lease and had none, as most have.
func (li *leaseIndex) restore(key []byte, lease int64, tombstone bool) {
	if tombstone {
		lease = 0
	}
	li.mu.RLock()
	_, had := li.leased[string(key)]
	li.mu.RUnlock()
	if had || lease != 0 {
		li.attach(string(key), lease)
	}
}

// detach records that key no longer exists.
func (li *leaseIndex) detach(key string) {
	li.mu.Lock()
	defer li.mu.Unlock()
	li.detachLocked(key)
}

func (li *leaseIndex) detachLocked(key string) {
	old, ok := li.leased[key]
	if !ok {
		return
	}
	delete(li.leased, key)
	delete(li.keys[old], key)
	if len(li.keys[old]) == 0 {
		delete(li.keys, old)
	}
}

// keysOf returns the keys attached to lease, in key order: deleting them
// in that order gives every member the same sub-revisions.
func (li *leaseIndex) keysOf(lease int64) []string {
	li.mu.RLock()
	keys := make([]string, 0, len(li.keys[lease]))
	for k := range li.keys[lease] {
		keys = append(keys, k)
	}
	li.mu.RUnlock()
	slices.Sort(keys)
	return keys
}
