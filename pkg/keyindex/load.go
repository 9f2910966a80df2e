package keyindex

import (
	"bytes"
	"hash/maphash"
	"runtime"
	"slices"

	"github.com/cairnkv/cairn/pkg/ostree"
)

// Loader rebuilds the key index from the backend's revisions, read in
// revision order when a store opens. It gathers each key's revisions
// through a hash table per shard (keyTable), then sorts each shard's keys
// and builds the tree bottom-up from the sorted runs merged
// (ostree.Build). Inserting each key into the tree as it came descended
// the tree once per key, in the random order the keys were written: a few
// cache misses per key, most of a restart's time at 10M keys.
//
// The keys are split by hash among shards, one goroutine each (as many as
// there are cores, up to maxLoadShards), so that the cache misses of the
// lookups are waited for on every core while the caller reads the
// backend. A revision's key may point into the backend's memory map: the
// loader keeps no key it has not copied, and is done with them once index
// or stop has returned, which must be before the read transaction ends.
type Loader struct {
	hash    func(key []byte) uint64
	shards  []*loadShard
	filling [][]loadEntry // per shard, the batch add is filling
	lastRev int64
	stopped bool
}

// loadEntry is one revision, as add hands it to a shard.
type loadEntry struct {
	key                []byte
	hash               uint64
	rev                Revision
	tombstone          bool
	createRev, version int64
}

// loadShard gathers the keys of one share of the hashes.
type loadShard struct {
	in   chan []loadEntry // full batches from add; closed by stop
	free chan []loadEntry // batches the shard is done with
	done chan struct{}    // closed once items are sorted
	// keys are the keyIndexes in the order of their first revision; table
	// finds a key's place among them.
	keys  []*keyIndex
	table keyTable
	items []indexItem
}

const (
	maxLoadShards = 4
	loadBatch     = 1024 // revisions handed to a shard at once
	loadBatches   = 4    // batches per shard: one filling, some queued, one worked on
)

// NewLoader is a loader with no revision yet, its shards' goroutines
// started: Index or Stop ends them.
func NewLoader() *Loader {
	seed := maphash.MakeSeed()
	n := min(runtime.GOMAXPROCS(0), maxLoadShards)
	l := &Loader{
		hash:    func(key []byte) uint64 { return maphash.Bytes(seed, key) },
		shards:  make([]*loadShard, n),
		filling: make([][]loadEntry, n),
	}
	for i := range l.shards {
		sh := &loadShard{
			in:   make(chan []loadEntry, loadBatches),
			free: make(chan []loadEntry, loadBatches),
			done: make(chan struct{}),
		}
		for range loadBatches - 1 {
			sh.free <- make([]loadEntry, 0, loadBatch)
		}
		l.shards[i] = sh
		l.filling[i] = make([]loadEntry, 0, loadBatch)
		go sh.run()
	}
	return l
}

// Add replays one revision of key (see keyIndex.restore). The revisions
// come in revision order, before Index or Stop.
func (l *Loader) Add(key []byte, rev Revision, tombstone bool, createRev, version int64) {
	l.lastRev = max(l.lastRev, rev.Main)
	h := l.hash(key)
	i := int(h % uint64(len(l.shards)))
	l.filling[i] = append(l.filling[i], loadEntry{key, h, rev, tombstone, createRev, version})
	if len(l.filling[i]) == loadBatch {
		sh := l.shards[i]
		sh.in <- l.filling[i]
		l.filling[i] = <-sh.free
	}
}

// Stop hands the shards what is left and waits until each has sorted its
// keys. It may be called more than once.
func (l *Loader) Stop() {
	if l.stopped {
		return
	}
	l.stopped = true
	for i, sh := range l.shards {
		if len(l.filling[i]) > 0 {
			sh.in <- l.filling[i]
		}
		l.filling[i] = nil
		close(sh.in)
	}
	for _, sh := range l.shards {
		<-sh.done
	}
}

// Index is the key index of every revision added.
func (l *Loader) Index() *Index {
	l.Stop()
	runs := make([][]indexItem, len(l.shards))
	for i, sh := range l.shards {
		runs[i] = sh.items
		sh.items = nil
	}
	ti := New()
	n := 0
	for _, run := range runs {
		n += len(run)
	}
	ti.tree = ostree.Build(lessItem, liveWeight, n, merger(runs))
	ti.changes.skip(l.lastRev)
	return ti
}

// run gathers the revisions of the batches until in is closed, then sorts
// the shard's keys.
func (sh *loadShard) run() {
	defer close(sh.done)
	for batch := range sh.in {
		for i := range batch {
			sh.add(&batch[i])
		}
		clear(batch) // drop the keys, which may point into the backend
		sh.free <- batch[:0]
	}
	sh.items = make([]indexItem, len(sh.keys))
	for i, ki := range sh.keys {
		sh.items[i] = itemOf(ki)
	}
	sh.keys, sh.table = nil, keyTable{}
	slices.SortFunc(sh.items, compareItems)
}

func (sh *loadShard) add(e *loadEntry) {
	tag := uint32(e.hash >> 32)
	if i, ok := sh.table.find(tag, e.key, sh.keys); ok {
		sh.keys[i].restore(e.rev, e.tombstone, e.createRev, e.version)
		return
	}
	if e.tombstone {
		return // a deletion with no surviving history changes nothing
	}
	ki := newKeyIndex(bytes.Clone(e.key))
	ki.restore(e.rev, e.tombstone, e.createRev, e.version)
	sh.table.add(tag, len(sh.keys))
	sh.keys = append(sh.keys, ki)
}

// merger hands out the items of runs, each sorted by compareItems and none
// holding a key another holds, in order (see ostree.Build's fill).
func merger(runs [][]indexItem) func(dst []indexItem) {
	return func(dst []indexItem) {
		for i := range dst {
			least := -1
			for r, run := range runs {
				if len(run) > 0 && (least < 0 || compareItems(run[0], runs[least][0]) < 0) {
					least = r
				}
			}
			dst[i], runs[least] = runs[least][0], runs[least][1:]
		}
	}
}
