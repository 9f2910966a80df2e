// Package keyindex is the MVCC store's key index: for each key, the
// revisions of its puts and tombstones in generations, kept in memory and
// ordered by key, so that a read at any revision finds where each key's
// value is, and a count of any range is a descent of a counted tree. The
// store feeds it every change, and rebuilds it from the db's revisions when
// it opens (Loader).
package keyindex

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cairnkv/cairn/pkg/ostree"
)

// Index maps each key to its keyIndex, ordered by key. Its tree
// weighs each key 1 while it exists at the latest revision, so that how
// many exist in a range is a descent of the tree; changes corrects that
// count for a read at an earlier revision. It is safe for concurrent use.
type Index struct {
	mu      sync.RWMutex
	tree    *ostree.Tree[indexItem]
	changes changeLog
}

// indexItem is what the tree holds for a key: its keyIndex, and the main
// revision of its newest put while the key exists at the latest revision (0
// otherwise), so that counting reads no keyIndex for most keys: the items
// lie side by side in the tree's nodes, the keyIndexes each elsewhere.
type indexItem struct {
	ki        *keyIndex
	liveSince int64
	// head is the key's first 8 bytes as a big-endian number, zeros past
	// its end: most comparisons of two keys end there, without reading
	// either keyIndex, each a cache miss away (inserting 1M keys in random
	// order compared keys for most of its time).
	head uint64
}

func lessItem(a, b indexItem) bool {
	if a.head != b.head {
		return a.head < b.head
	}
	return a.ki.key < b.ki.key
}

// compareItems orders items as lessItem does, for sorting.
func compareItems(a, b indexItem) int {
	if a.head != b.head {
		return cmp.Compare(a.head, b.head)
	}
	return strings.Compare(a.ki.key, b.ki.key)
}

func keyHead(key []byte) uint64 {
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}

// itemOf is the item that holds ki in the tree.
func itemOf(ki *keyIndex) indexItem {
	return indexItem{ki: ki, liveSince: ki.liveSince(), head: keyHead(asBytes(ki.key))}
}

// probes holds the keyIndex values that lookups compare with: one made
// per lookup would be allocated, since the tree's comparison lets it escape.
var probes = sync.Pool{New: func() any { return new(keyIndex) }}

// itemFor is the item to look key up with, never stored in the tree; give
// it back with release once the lookup is done.
func itemFor(key []byte) indexItem {
	ki := probes.Get().(*keyIndex)
	ki.key = asString(key)
	return indexItem{ki: ki, head: keyHead(key)}
}

// release gives back an item of itemFor's.
func (it indexItem) release() {
	it.ki.key = ""
	probes.Put(it.ki)
}

// get returns the item of key. ti.mu is held.
func (ti *Index) get(key []byte) (indexItem, bool) {
	probe := itemFor(key)
	defer probe.release()
	return ti.tree.Get(probe)
}

// existsAt reports whether the key exists at main revision atRev.
func (it indexItem) existsAt(atRev int64) bool {
	if it.liveSince != 0 && it.liveSince <= atRev {
		return true // the common case: live, and unchanged since atRev
	}
	_, _, _, ok := it.ki.get(atRev)
	return ok
}

func New() *Index {
	return &Index{tree: ostree.New(lessItem, liveWeight), changes: changeLog{limit: maxChanges}}
}

// liveWeight weighs a key 1 while it exists.
func liveWeight(it indexItem) int {
	if it.liveSince != 0 {
		return 1
	}
	return 0
}

// KeyAt is the state of one key at a revision, as the index knows it: the
// revision of its value, that of the put that created it, its version.
type KeyAt struct {
	Key     []byte
	Mod     Revision
	Created Revision
	Version int64
}

// at returns the state of ki at atRev.
func (ki *keyIndex) at(atRev int64) (KeyAt, bool) {
	mod, created, ver, ok := ki.get(atRev)
	return KeyAt{Key: asBytes(ki.key), Mod: mod, Created: created, Version: ver}, ok
}

// Get returns the state of key at atRev.
func (ti *Index) Get(key []byte, atRev int64) (KeyAt, bool) {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	it, ok := ti.get(key)
	if !ok {
		return KeyAt{}, false
	}
	return it.ki.at(atRev)
}

// visit calls fn for the item of each key in [key, end) in key order until
// fn returns false. An empty end means the single key; end "\x00" means
// every key from key on.
func (ti *Index) visit(key, end []byte, fn func(indexItem) bool) {
	if len(end) == 0 {
		if it, ok := ti.get(key); ok {
			fn(it)
		}
		return
	}
	from, to := itemFor(key), itemFor(end)
	defer from.release()
	defer to.release()
	hasFrom, hasTo := true, !IsInfiniteEnd(end)
	if hasTo && bytes.Compare(key, end) >= 0 {
		return
	}
	// A bound beyond every key is dropped: the tree would compare it with
	// the keys of each node (from) or with each key (to).
	if first, ok := ti.tree.Min(); ok && bytes.Compare(key, asBytes(first.ki.key)) <= 0 {
		hasFrom = false
	}
	if last, ok := ti.tree.Max(); ok && hasTo && bytes.Compare(asBytes(last.ki.key), end) < 0 {
		hasTo = false
	}
	switch {
	case !hasFrom && !hasTo:
		ti.tree.Ascend(fn)
	case !hasTo:
		ti.tree.AscendGreaterOrEqual(from, fn)
	case !hasFrom:
		ti.tree.AscendLessThan(to, fn)
	default:
		ti.tree.AscendRange(from, to, fn)
	}
}

// IsInfiniteEnd reports whether end is "\x00", the range end that means
// every key from the range's key on.
func IsInfiniteEnd(end []byte) bool { return len(end) == 1 && end[0] == 0 }

// RangeAt returns the states at atRev of the keys in [key, end) that exist
// then, at most limit of them (0 for no limit), and how many exist in all.
func (ti *Index) RangeAt(key, end []byte, atRev int64, limit int) (kas []KeyAt, total int) {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	kas = make([]KeyAt, 0, ti.countWalk(key, end, atRev, limit))
	total = ti.visitAtLocked(key, end, atRev, limit, func(ka KeyAt) { kas = append(kas, ka) })
	return kas, total
}

// ModRevisionsAt is RangeAt for a caller that needs only where each key's
// value is: its mod revision, a quarter of a KeyAt's size.
func (ti *Index) ModRevisionsAt(key, end []byte, atRev int64, limit int) (mods []Revision, total int) {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	mods = make([]Revision, 0, ti.countWalk(key, end, atRev, limit))
	total = ti.visitAtLocked(key, end, atRev, limit, func(ka KeyAt) { mods = append(mods, ka.Mod) })
	return mods, total
}

// VisitAt calls fn as visitAtLocked does.
func (ti *Index) VisitAt(key, end []byte, atRev int64, limit int, fn func(KeyAt)) (total int) {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	return ti.visitAtLocked(key, end, atRev, limit, fn)
}

// visitAtLocked calls fn with the state at atRev of each key in [key, end)
// that exists then, for at most limit of them (0 for no limit), and
// returns how many exist in all: past the limit it counts (countLocked)
// rather than walks. ti.mu is held.
//
// The items are taken a batch at a time and their keyIndexes and keys
// loaded by warm before any is read: in a large keyspace each is a cache
// miss, and loads that do not depend on each other are waited for together.
func (ti *Index) visitAtLocked(key, end []byte, atRev int64, limit int, fn func(KeyAt)) (total int) {
	taken := 0
	var batch [WarmBatch]indexItem
	n := 0
	take := func() {
		warm(batch[:n])
		for _, it := range batch[:n] {
			if ka, ok := it.ki.at(atRev); ok {
				fn(ka)
				taken++
			}
		}
		n = 0
	}
	full := false
	ti.visit(key, end, func(it indexItem) bool {
		if limit > 0 && taken+n >= limit {
			take()
			if full = taken == limit; full {
				return false
			}
		}
		batch[n] = it
		if n++; n == len(batch) {
			take()
		}
		return true
	})
	if full {
		return ti.countLocked(key, end, atRev)
	}
	take()
	return taken
}

// WarmBatch is how many keys warm loads at once: enough to keep the
// processor's outstanding misses busy, few enough to stay in its cache.
const WarmBatch = 32

// warmed keeps warm's loads from being optimized away.
var warmed atomic.Uintptr

// warm loads the keyIndex of each item, then the first bytes of its newest
// generation and of its key, so that reading them next finds them cached.
func warm(items []indexItem) {
	var sum uintptr
	for i := range items {
		sum += uintptr(len(items[i].ki.generations))
	}
	for i := range items {
		ki := items[i].ki
		g := &ki.generations[len(ki.generations)-1]
		if len(g.revs) > 0 {
			sum += uintptr(g.revs[len(g.revs)-1].Main)
		}
		if len(ki.key) > 0 {
			sum += uintptr(ki.key[0])
		}
	}
	warmed.Store(sum)
}

// CountAt returns how many keys in [key, end) exist at atRev. It allocates
// nothing per key.
func (ti *Index) CountAt(key, end []byte, atRev int64) int {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	return ti.countLocked(key, end, atRev)
}

// countLocked is countAt with ti.mu held: the keys that exist now, from the
// counted tree, corrected by the changes since atRev, unless there are more
// of those than keys in the range, or the log does not reach back to atRev:
// then a walk of the range.
func (ti *Index) countLocked(key, end []byte, atRev int64) int {
	if len(end) == 0 {
		if it, ok := ti.get(key); ok && it.existsAt(atRev) {
			return 1
		}
		return 0
	}
	upToItems, upToLive := ti.tree.Len(), ti.tree.Weight() // before end
	if !IsInfiniteEnd(end) {
		if bytes.Compare(key, end) >= 0 {
			return 0
		}
		probe := itemFor(end)
		upToItems, upToLive = ti.tree.Before(probe)
		probe.release()
	}
	probe := itemFor(key)
	n, w := ti.tree.Before(probe)
	probe.release()
	items, live := upToItems-n, upToLive-w
	changes, ok := ti.changes.since(atRev)
	if !ok || len(changes) >= items {
		return ti.countWalk(key, end, atRev, 0)
	}
	return live - existenceChange(changes, key, end, atRev)
}

// countWalk counts the keys of [key, end) that exist at atRev by walking
// them, stopping at limit (0: no limit). ti.mu is held.
func (ti *Index) countWalk(key, end []byte, atRev int64, limit int) int {
	n := 0
	ti.visit(key, end, func(it indexItem) bool {
		if it.existsAt(atRev) {
			n++
		}
		return limit <= 0 || n < limit
	})
	return n
}

// Put records that key changed at rev.
func (ti *Index) Put(key []byte, rev Revision) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	var ki *keyIndex
	probe := itemFor(key)
	ti.tree.Update(probe, func(old indexItem, found bool) indexItem {
		if ki = old.ki; !found {
			ki = newKeyIndex(key)
		}
		ki.put(rev)
		return itemOf(ki)
	})
	probe.release()
	ti.changes.add(rev, ki)
}

// update stores ki's item after a change of ki. ti.mu is held.
func (ti *Index) update(ki *keyIndex) {
	ti.tree.ReplaceOrInsert(itemOf(ki))
}

// Tombstone records that key was deleted at rev; false when it did not exist.
func (ti *Index) Tombstone(key []byte, rev Revision) bool {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	it, ok := ti.get(key)
	if !ok || !it.ki.tombstone(rev) {
		return false
	}
	ti.update(it.ki)
	ti.changes.add(rev, it.ki)
	return true
}

// Compact drops the history no read at or after atRev needs. It holds the
// index's lock throughout: at a start, before the index serves.
func (ti *Index) Compact(atRev int64) {
	for from := []byte{}; from != nil; {
		from = ti.CompactBatch(atRev, from, math.MaxInt)
	}
}

// CompactBatch compacts at atRev the keys from `from` on, at most limit of
// them, and returns the key to go on from: nil once the last key is done,
// when it also forgets the changes up to atRev. It holds the index's lock
// for the batch only, so that a compaction of millions of keys, a batch at
// a time, lets the writes and reads between its batches through. Reads at
// or after atRev find the same whether a key is compacted yet or not: the
// revision at or before atRev that a compaction keeps in the backend is
// the one Get(key, atRev) finds.
func (ti *Index) CompactBatch(atRev int64, from []byte, limit int) (next []byte) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	var emptied []indexItem
	next = ti.batch(from, limit, func(it indexItem) {
		if it.ki.compact(atRev) {
			emptied = append(emptied, it)
		}
	})
	for _, it := range emptied {
		ti.tree.Delete(it)
	}
	if next == nil {
		ti.changes.forget(atRev)
	}
	return next
}

// RetainsAny reports whether a compaction at compactRev retains a revision
// of any key: whether some key is live at compactRev. It holds the index's
// read lock for limit keys at a time.
func (ti *Index) RetainsAny(compactRev int64, limit int) bool {
	found := false
	for from := []byte{}; from != nil && !found; {
		ti.mu.RLock()
		from = ti.batch(from, limit, func(it indexItem) {
			if _, ok := it.ki.kept(compactRev); ok {
				found = true
			}
		})
		ti.mu.RUnlock()
	}
	return found
}

// batch calls fn for the items of the keys from `from` on, at most limit
// of them, and returns the key of the item after them (nil if there is
// none). ti.mu is held.
func (ti *Index) batch(from []byte, limit int, fn func(indexItem)) (next []byte) {
	n := 0
	probe := itemFor(from)
	defer probe.release()
	ti.tree.AscendGreaterOrEqual(probe, func(it indexItem) bool {
		if n == limit {
			next = asBytes(it.ki.key)
			return false
		}
		fn(it)
		n++
		return true
	})
	return next
}

// Len returns the number of keys with history in the index.
func (ti *Index) Len() int {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	return ti.tree.Len()
}
