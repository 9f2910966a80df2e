package store

import (
	"bytes"
	"sync"

	"github.com/google/btree"
)

// treeIndex maps each key to its keyIndex, ordered by key. It is safe for
// concurrent use.
type treeIndex struct {
	mu   sync.RWMutex
	tree *btree.BTreeG[*keyIndex]
}

func lessKeyIndex(a, b *keyIndex) bool { return bytes.Compare(a.key, b.key) < 0 }

func newTreeIndex() *treeIndex {
	return &treeIndex{tree: btree.NewG(32, lessKeyIndex)}
}

// keyAt is the state of one key at a revision, as the index knows it.
type keyAt struct {
	key     []byte
	mod     Revision
	created Revision
	version int64
}

// at returns the state of ki at atRev.
func (ki *keyIndex) at(atRev int64) (keyAt, bool) {
	mod, created, ver, ok := ki.get(atRev)
	return keyAt{key: ki.key, mod: mod, created: created, version: ver}, ok
}

// get returns the state of key at atRev.
func (ti *treeIndex) get(key []byte, atRev int64) (keyAt, bool) {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	ki, ok := ti.tree.Get(&keyIndex{key: key})
	if !ok {
		return keyAt{}, false
	}
	return ki.at(atRev)
}

// visit calls fn for each keyIndex in [key, end) in key order until fn
// returns false. An empty end means the single key; end "\x00" means every
// key from key on.
func (ti *treeIndex) visit(key, end []byte, fn func(*keyIndex) bool) {
	if len(end) == 0 {
		if ki, ok := ti.tree.Get(&keyIndex{key: key}); ok {
			fn(ki)
		}
		return
	}
	var from, to *keyIndex
	if !isInfiniteEnd(end) {
		if bytes.Compare(key, end) >= 0 {
			return
		}
		to = &keyIndex{key: end}
	}
	// A bound beyond every key is dropped: the tree would compare it with
	// the keys of each node (from) or with each key (to).
	if first, ok := ti.tree.Min(); ok && bytes.Compare(key, first.key) > 0 {
		from = &keyIndex{key: key}
	}
	if last, ok := ti.tree.Max(); ok && to != nil && bytes.Compare(last.key, end) < 0 {
		to = nil
	}
	switch {
	case from == nil && to == nil:
		ti.tree.Ascend(fn)
	case to == nil:
		ti.tree.AscendGreaterOrEqual(from, fn)
	case from == nil:
		ti.tree.AscendLessThan(to, fn)
	default:
		ti.tree.AscendRange(from, to, fn)
	}
}

func isInfiniteEnd(end []byte) bool { return len(end) == 1 && end[0] == 0 }

// rangeAt returns the states at atRev of the keys in [key, end) that exist
// then, at most limit of them (0 for no limit), and how many exist in all.
func (ti *treeIndex) rangeAt(key, end []byte, atRev int64, limit int) (kas []keyAt, total int) {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	ti.visit(key, end, func(ki *keyIndex) bool {
		if limit > 0 && len(kas) == limit {
			if ki.existsAt(atRev) {
				total++
			}
			return true
		}
		ka, ok := ki.at(atRev)
		if ok {
			kas = append(kas, ka)
			total++
		}
		return true
	})
	return kas, total
}

// countAt returns how many keys in [key, end) exist at atRev. It allocates
// nothing per key.
func (ti *treeIndex) countAt(key, end []byte, atRev int64) int {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	total := 0
	ti.visit(key, end, func(ki *keyIndex) bool {
		if ki.existsAt(atRev) {
			total++
		}
		return true
	})
	return total
}

// put records that key changed at rev.
func (ti *treeIndex) put(key []byte, rev Revision) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ki, ok := ti.tree.Get(&keyIndex{key: key})
	if !ok {
		ki = newKeyIndex(key)
		ti.tree.ReplaceOrInsert(ki)
	}
	ki.put(rev)
}

// tombstone records that key was deleted at rev; false when it did not exist.
func (ti *treeIndex) tombstone(key []byte, rev Revision) bool {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ki, ok := ti.tree.Get(&keyIndex{key: key})
	return ok && ki.tombstone(rev)
}

// compact drops the history no read at or after atRev needs and returns the
// revisions at or before atRev that must stay in the backend.
func (ti *treeIndex) compact(atRev int64) map[Revision]struct{} {
	available := make(map[Revision]struct{})
	ti.mu.Lock()
	defer ti.mu.Unlock()
	var emptied []*keyIndex
	ti.tree.Ascend(func(ki *keyIndex) bool {
		if ki.compact(atRev, available) {
			emptied = append(emptied, ki)
		}
		return true
	})
	for _, ki := range emptied {
		ti.tree.Delete(ki)
	}
	return available
}

// keep returns the revisions at or before compactRev that a compaction at
// compactRev retains and that are still their key's latest at atRev, and
// how many a compaction at compactRev retains in all.
func (ti *treeIndex) keep(compactRev, atRev int64) (visible map[Revision]struct{}, retained int) {
	visible = make(map[Revision]struct{})
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	ti.tree.Ascend(func(ki *keyIndex) bool {
		rev, ok := ki.kept(compactRev)
		if !ok {
			return true
		}
		retained++
		if mod, _, _, live := ki.get(atRev); live && mod == rev {
			visible[rev] = struct{}{}
		}
		return true
	})
	return visible, retained
}

// len returns the number of keys with history in the index.
func (ti *treeIndex) len() int {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	return ti.tree.Len()
}

// restore replays one backend revision into the index (see keyIndex.restore).
func (ti *treeIndex) restore(key []byte, rev Revision, tombstone bool, createRev, version int64) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ki, ok := ti.tree.Get(&keyIndex{key: key})
	if !ok {
		if tombstone {
			return // a deletion with no surviving history changes nothing
		}
		ki = newKeyIndex(key)
		ti.tree.ReplaceOrInsert(ki)
	}
	ki.restore(rev, tombstone, createRev, version)
}
