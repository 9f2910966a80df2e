// Package backend is a bbolt file written in batches: writers fill a
// write buffer that readers consult before the file, and a commit loop
// writes each batch in one bbolt transaction. It knows buckets, keys and
// values, nothing of revisions; pkg/store keeps its MVCC data in one.
package backend

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/cairnkv/cairn/pkg/boltfile"
	"github.com/cairnkv/cairn/pkg/failpoint"
)

// Config configures a backend.
type Config struct {
	// Path of the bbolt file (member/snap/db in a data directory).
	Path string
	// BatchInterval is the longest a write waits before its batch commits.
	BatchInterval time.Duration
	// BatchLimit is the number of writes after which a batch commits at once.
	BatchLimit int
	// InitialMmapSize reserves address space so that a growing file rarely remaps.
	InitialMmapSize int
	// Logger receives commit failures; nil discards.
	Logger *slog.Logger
	// OnCommit, if set, is told how long each commit took, OnBoltCommit
	// how long bbolt spent in it rebalancing, spilling and writing. They
	// must be cheap and safe for concurrent use.
	OnCommit     func(time.Duration)
	OnBoltCommit func(rebalance, spill, write time.Duration)
	// DenseBuckets are the buckets whose keys only grow (a store's
	// revisions): their pages are filled instead of split in half.
	DenseBuckets []string
	// Mlock locks the file's pages in memory (etcd's --memory-mlock).
	Mlock bool
	// FreelistType is bbolt's freelist: "array", or "map" (the default;
	// etcd's --backend-bbolt-freelist-type).
	FreelistType string
}

// Defaults of etcd: a batch commits after 100 ms or 10000 writes.
const (
	DefaultBatchInterval   = 100 * time.Millisecond
	DefaultBatchLimit      = 10000
	defaultInitialMmapSize = 64 << 20
)

func (c *Config) withDefaults() {
	if c.BatchInterval <= 0 {
		c.BatchInterval = DefaultBatchInterval
	}
	if c.BatchLimit <= 0 {
		c.BatchLimit = DefaultBatchLimit
	}
	if c.InitialMmapSize <= 0 {
		c.InitialMmapSize = defaultInitialMmapSize
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Backend is a bbolt file written in batches. Writers only fill a write
// buffer, which readers consult before bbolt, so a write is visible as soon
// as it is made. On an interval, or once a batch holds BatchLimit writes,
// the buffer is swapped for an empty one and written to bbolt in one
// transaction, outside the writers' lock: a commit (B+tree updates, page
// writes, two fsyncs) never stalls the writers, which is where etcd's
// latency peaks come from.
type Backend struct {
	cfg Config

	// dbMu guards db, the file: held shared to begin a transaction on it,
	// exclusively to swap it for its defragmented copy or close it. A view
	// keeps the file it began on; bbolt's Close waits for such views.
	dbMu sync.RWMutex
	db   *bolt.DB
	// retired are files a defragmentation replaced, closed in the
	// background once their last view ends; Close waits for them.
	retired sync.WaitGroup
	// defrags counts the defragmentations running or waiting to.
	defrags atomic.Int32

	// commitMu serialises commits: bbolt has one write transaction at a time.
	commitMu sync.Mutex
	// committed says a commit wrote to the file this process opened; a
	// file never written to is left untouched by Close (guarded by
	// commitMu).
	committed bool

	// batchMu serialises writers, and a commit's swap of the buffers.
	batchMu sync.Mutex
	pending int             // writes in open
	buckets map[string]bool // buckets in the file or in a buffer
	closed  bool
	failed  error // a commit failed: its batch is lost and every later write fails

	// bufMu guards the buffers: open, which writers fill, and flushing, the
	// batch being committed. A reader keeps the pair it found when it began,
	// together with its bbolt transaction, for a consistent view.
	bufMu    sync.RWMutex
	open     *writeBuffer
	flushing *writeBuffer

	size      atomic.Int64 // of the file, as of the last commit
	openReads atomic.Int64 // read views open (OpenReads)

	commitNow chan struct{} // asks the commit loop for a commit before the interval
	stop      chan struct{}
	done      chan struct{}
}

// ErrClosed is returned by a backend after Close.
var ErrClosed = errors.New("backend is closed")

// Open opens or creates the bbolt file at cfg.Path and starts its commit
// timer.
func Open(cfg Config) (*Backend, error) {
	cfg.withDefaults()
	db, err := openBolt(cfg)
	if err != nil {
		return nil, err
	}
	b := &Backend{cfg: cfg, db: db, open: newWriteBuffer(), buckets: map[string]bool{},
		commitNow: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	err = db.View(func(tx *bolt.Tx) error {
		b.size.Store(tx.Size())
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			b.buckets[string(name)] = true
			return nil
		})
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", cfg.Path, err)
	}
	go b.commitLoop()
	return b, nil
}

func openBolt(cfg Config) (db *bolt.DB, err error) {
	// bbolt panics on some kinds of corruption; report them as errors.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("open %s: corrupt bbolt file: %v", cfg.Path, r)
		}
	}()
	freelist := bolt.FreelistMapType
	if cfg.FreelistType == "array" {
		freelist = bolt.FreelistArrayType
	}
	db, err = bolt.Open(cfg.Path, 0o600, &bolt.Options{
		Timeout:         5 * time.Second,
		InitialMmapSize: cfg.InitialMmapSize,
		NoFreelistSync:  true,
		FreelistType:    freelist,
		Mlock:           cfg.Mlock,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", cfg.Path, err)
	}
	return db, nil
}

func (b *Backend) commitLoop() {
	defer close(b.done)
	t := time.NewTicker(b.cfg.BatchInterval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		case <-b.commitNow:
		}
		b.commit() // a failure is logged, and fails every later write
	}
}

// commit writes the open batch to bbolt. Writers carry on into a new batch
// while it runs.
func (b *Backend) commit() error {
	b.commitMu.Lock()
	defer b.commitMu.Unlock()
	return b.commitHeld()
}

// commitHeld is commit with commitMu held.
func (b *Backend) commitHeld() error {
	b.batchMu.Lock()
	if b.closed {
		b.batchMu.Unlock()
		return ErrClosed
	}
	if b.failed != nil || b.pending == 0 {
		b.batchMu.Unlock()
		return b.failed // nothing to commit: leave the file untouched
	}
	batch := b.swapLocked()
	b.batchMu.Unlock()
	err := b.flushBatch(batch)
	if err != nil {
		b.batchMu.Lock()
		b.failed = err
		b.batchMu.Unlock()
	}
	return err
}

// flushBatch writes the swapped-out batch to bbolt and then stops readers
// from looking it up. commitMu is held.
func (b *Backend) flushBatch(batch *writeBuffer) error {
	b.dbMu.RLock()
	db := b.db // the file changes only under commitMu, which is held
	b.dbMu.RUnlock()
	start := time.Now()
	err := b.flush(db, batch)
	if b.cfg.OnCommit != nil {
		b.cfg.OnCommit(time.Since(start))
	}
	if err != nil {
		b.cfg.Logger.Error("backend commit failed; later writes will fail", "path", b.cfg.Path, "err", err)
		return err // the batch stays readable in flushing
	}
	// Only now are the batch's writes in bbolt: a reader that begins from
	// here on finds them there.
	b.bufMu.Lock()
	b.flushing = nil
	b.bufMu.Unlock()
	return nil
}

// commitLocked commits the open batch with the writers kept out. commitMu
// and batchMu are held.
func (b *Backend) commitLocked() error {
	if b.failed != nil || b.pending == 0 {
		return b.failed
	}
	b.failed = b.flushBatch(b.swapLocked())
	return b.failed
}

// swapLocked makes the open batch the one being flushed and opens a new
// one. batchMu and commitMu are held, and no batch is being flushed.
func (b *Backend) swapLocked() *writeBuffer {
	b.bufMu.Lock()
	defer b.bufMu.Unlock()
	batch := b.open
	b.flushing, b.open = batch, newWriteBuffer()
	b.pending = 0
	return batch
}

// flush writes batch to bbolt in one transaction: its buckets, then each
// bucket's writes in key order. commitMu is held.
func (b *Backend) flush(db *bolt.DB, batch *writeBuffer) error {
	tx, err := db.Begin(true)
	if err != nil {
		return fmt.Errorf("commit %s: begin: %w", b.cfg.Path, err)
	}
	for _, name := range batch.bucketNames() {
		bk, err := tx.CreateBucketIfNotExists([]byte(name))
		if err != nil {
			tx.Rollback()
			return fmt.Errorf("commit %s: bucket %q: %w", b.cfg.Path, name, err)
		}
		bb := batch.buckets[name]
		if slices.Contains(b.cfg.DenseBuckets, name) {
			// Keys only grow: pages that fill up are not written to again,
			// so fill them (as etcd does its revisions) rather than split
			// them in half.
			bk.FillPercent = 0.9
		}
		for _, k := range bb.sortedKeys() {
			v := bb.entries[k]
			if v.deleted {
				err = bk.Delete([]byte(k))
			} else {
				err = bk.Put([]byte(k), v.value)
			}
			if err != nil {
				tx.Rollback()
				return fmt.Errorf("commit %s: key %q in bucket %q: %w", b.cfg.Path, k, name, err)
			}
		}
	}
	failpoint.Hit("backendBeforeCommit")
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit %s: %w", b.cfg.Path, err)
	}
	b.committed = true
	if b.cfg.OnBoltCommit != nil {
		ts := tx.Stats()
		b.cfg.OnBoltCommit(ts.GetRebalanceTime(), ts.GetSpillTime(), ts.GetWriteTime())
	}
	failpoint.Hit("backendAfterCommit")
	return b.refreshSize(db)
}

// refreshSize records the size of db as of its last commit.
func (b *Backend) refreshSize(db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) error {
		b.size.Store(tx.Size())
		return nil
	})
}

// ForceCommit commits the open batch now, and returns once it is in the
// file.
func (b *Backend) ForceCommit() error { return b.commit() }

// Write locks the batch for one writer. The caller must call Unlock.
func (b *Backend) Write() *WriteTx {
	b.batchMu.Lock()
	return &WriteTx{b: b}
}

// WriteTx is the write side of the open batch, held by one writer at a time.
// Values returned by Get are valid until Unlock.
type WriteTx struct {
	b      *Backend
	writes int
}

func (wt *WriteTx) usable() error {
	if wt.b.closed {
		return ErrClosed
	}
	return wt.b.failed
}

// CreateBucket creates bucket if it does not exist.
func (wt *WriteTx) CreateBucket(bucket []byte) error {
	if err := wt.usable(); err != nil {
		return err
	}
	if len(bucket) == 0 {
		return fmt.Errorf("create bucket: %w", bolterrors.ErrBucketNameRequired)
	}
	if !wt.b.buckets[string(bucket)] {
		wt.b.buckets[string(bucket)] = true
		wt.b.bufMu.Lock()
		wt.b.open.bucket(bucket)
		wt.b.bufMu.Unlock()
		wt.writes++
	}
	return nil
}

// Put sets key to value in bucket. value must not be modified afterwards.
func (wt *WriteTx) Put(bucket, key, value []byte) error {
	if err := wt.usable(); err != nil {
		return err
	}
	if !wt.b.buckets[string(bucket)] {
		return fmt.Errorf("put %q: bucket %q does not exist", key, bucket)
	}
	// bbolt's own checks, made now rather than at the commit
	switch {
	case len(key) == 0:
		return fmt.Errorf("put in bucket %q: %w", bucket, bolterrors.ErrKeyRequired)
	case len(key) > bolt.MaxKeySize:
		return fmt.Errorf("put %q in bucket %q: %w", key[:32], bucket, bolterrors.ErrKeyTooLarge)
	case int64(len(value)) > bolt.MaxValueSize:
		return fmt.Errorf("put %q in bucket %q: %w", key, bucket, bolterrors.ErrValueTooLarge)
	}
	wt.buffer(bucket, key, bufferedValue{value: value})
	return nil
}

// Delete removes key from bucket.
func (wt *WriteTx) Delete(bucket, key []byte) error {
	if err := wt.usable(); err != nil {
		return err
	}
	if !wt.b.buckets[string(bucket)] {
		return fmt.Errorf("delete %q: bucket %q does not exist", key, bucket)
	}
	wt.buffer(bucket, key, bufferedValue{deleted: true})
	return nil
}

func (wt *WriteTx) buffer(bucket, key []byte, v bufferedValue) {
	wt.b.bufMu.Lock()
	wt.b.open.set(bucket, key, v)
	wt.b.bufMu.Unlock()
	wt.writes++
}

// Get reads key from bucket, seeing this batch's writes.
func (wt *WriteTx) Get(bucket, key []byte) []byte {
	if wt.usable() != nil {
		return nil
	}
	// A bbolt transaction for this one read: one held until Unlock could
	// keep a commit that must grow the file's mapping waiting on it.
	rt := wt.b.Read()
	defer rt.Close()
	v, ok := rt.Get(bucket, key)
	if !ok {
		return nil
	}
	return bytes.Clone(v)
}

// Range calls fn for each key of bucket in [start, end) (end nil: to the
// end) in order, until fn returns false. fn may write through wt.
func (wt *WriteTx) Range(bucket, start, end []byte, fn func(k, v []byte) bool) error {
	if err := wt.usable(); err != nil {
		return err
	}
	rt := wt.b.Read()
	defer rt.Close()
	return rt.Range(bucket, start, end, fn)
}

// Unlock ends the writer's turn. A batch that reached the batch limit is
// committed in the background; the error is that of an earlier failed
// commit.
func (wt *WriteTx) Unlock() error {
	b := wt.b
	b.pending += wt.writes
	full, err := b.pending >= b.cfg.BatchLimit, b.failed
	b.batchMu.Unlock()
	if full && err == nil {
		select {
		case b.commitNow <- struct{}{}:
		default:
		}
	}
	return err
}

// Read opens a consistent view of the backend: committed data plus the
// buffered writes. The caller must Close it.
func (b *Backend) Read() *ReadTx {
	b.dbMu.RLock()
	defer b.dbMu.RUnlock()
	b.bufMu.RLock()
	defer b.bufMu.RUnlock()
	tx, err := b.db.Begin(false)
	if err != nil {
		return &ReadTx{err: fmt.Errorf("begin read %s: %w", b.cfg.Path, err)}
	}
	b.openReads.Add(1)
	return &ReadTx{b: b, tx: tx, open: b.open, flushing: b.flushing}
}

// ReadTx is a read view of the backend. Values it returns are valid until Close.
type ReadTx struct {
	b *Backend
	// tx began while flushing (if any) was not yet in the file; the
	// writers still add to open.
	tx             *bolt.Tx
	open, flushing *writeBuffer
	err            error
}

// buffered looks key up in the buffers, the newest first.
func (rt *ReadTx) buffered(bucket, key []byte) (bufferedValue, bool) {
	rt.b.bufMu.RLock()
	bv, ok := rt.open.get(bucket, key)
	rt.b.bufMu.RUnlock()
	if !ok && rt.flushing != nil {
		bv, ok = rt.flushing.get(bucket, key)
	}
	return bv, ok
}

// Get reads key from bucket.
func (rt *ReadTx) Get(bucket, key []byte) ([]byte, bool) {
	return rt.BucketReader(bucket).Get(key)
}

// BucketReader reads many keys of one bucket of a view, as Get does,
// through one bbolt cursor: it saves opening the bucket and a cursor for
// each key. Values are valid until the view closes.
type BucketReader struct {
	rt     *ReadTx
	bucket []byte
	opened bool         // c is set, or the bucket is not in the file
	c      *bolt.Cursor // opened on the first key not in the buffers
	at     []byte       // the key c is at (nil: none)
}

func (rt *ReadTx) BucketReader(bucket []byte) *BucketReader {
	return &BucketReader{rt: rt, bucket: bucket}
}

// Get reads key.
func (br *BucketReader) Get(key []byte) ([]byte, bool) {
	if br.rt.err != nil {
		return nil, false
	}
	if bv, ok := br.rt.buffered(br.bucket, key); ok {
		return bv.value, !bv.deleted
	}
	if !br.opened {
		br.opened = true
		if bk := br.rt.tx.Bucket(br.bucket); bk != nil {
			br.c = bk.Cursor()
		}
	}
	if br.c == nil {
		return nil, false
	}
	// Keys asked for in order, one after the other in the file (revisions
	// written together), are the cursor's next: no search from the root.
	if br.at != nil && bytes.Compare(key, br.at) > 0 {
		if k, v := br.c.Next(); k != nil && bytes.Equal(k, key) {
			br.at = k
			return v, v != nil
		}
	}
	k, v := br.c.Seek(key)
	br.at = k
	if v == nil || !bytes.Equal(k, key) {
		return nil, false
	}
	return v, true
}

// Range calls fn for each key of bucket in [start, end) (end nil: to the
// end) in key order, buffered writes merged in, until fn returns false.
func (rt *ReadTx) Range(bucket, start, end []byte, fn func(k, v []byte) bool) error {
	if rt.err != nil {
		return rt.err
	}
	// The buffered keys in range, each with its newest value.
	rt.b.bufMu.RLock()
	bufKeys := rt.open.sortedKeysIn(bucket, start, end)
	bufVals := make([]bufferedValue, len(bufKeys))
	for i, k := range bufKeys {
		bufVals[i], _ = rt.open.get(bucket, []byte(k))
	}
	rt.b.bufMu.RUnlock()
	if rt.flushing != nil {
		bufKeys, bufVals = mergeOlder(bufKeys, bufVals, rt.flushing, bucket, start, end)
	}

	var k, v []byte
	var c *bolt.Cursor
	if bk := rt.tx.Bucket(bucket); bk != nil {
		c = bk.Cursor()
		k, v = c.Seek(start)
	}
	next := func() {
		k, v = c.Next()
	}
	for {
		boltOK := k != nil && inRange(k, start, end)
		if !boltOK && len(bufKeys) == 0 {
			return nil
		}
		if len(bufKeys) > 0 && (!boltOK || bufKeys[0] <= string(k)) {
			bk, bv := bufKeys[0], bufVals[0]
			if boltOK && bk == string(k) {
				next() // the buffered write supersedes the committed value
			}
			bufKeys, bufVals = bufKeys[1:], bufVals[1:]
			if !bv.deleted && !fn([]byte(bk), bv.value) {
				return nil
			}
			continue
		}
		if !fn(k, v) {
			return nil
		}
		next()
	}
}

// mergeOlder adds to keys (sorted, with their values) the keys of older in
// [start, end) that are not among them.
func mergeOlder(keys []string, vals []bufferedValue, older *writeBuffer, bucket, start, end []byte) ([]string, []bufferedValue) {
	olderKeys := older.sortedKeysIn(bucket, start, end)
	if len(olderKeys) == 0 {
		return keys, vals
	}
	mk := make([]string, 0, len(keys)+len(olderKeys))
	mv := make([]bufferedValue, 0, len(keys)+len(olderKeys))
	i, j := 0, 0
	for i < len(keys) || j < len(olderKeys) {
		switch {
		case j == len(olderKeys) || (i < len(keys) && keys[i] < olderKeys[j]):
			mk, mv = append(mk, keys[i]), append(mv, vals[i])
			i++
		case i == len(keys) || olderKeys[j] < keys[i]:
			ov, _ := older.get(bucket, []byte(olderKeys[j]))
			mk, mv = append(mk, olderKeys[j]), append(mv, ov)
			j++
		default: // in both: the newer write counts
			mk, mv = append(mk, keys[i]), append(mv, vals[i])
			i++
			j++
		}
	}
	return mk, mv
}

// Close ends the view.
func (rt *ReadTx) Close() {
	if rt.err != nil || rt.tx == nil {
		return
	}
	rt.tx.Rollback()
	rt.tx = nil
	rt.b.openReads.Add(-1)
}

// OpenReads returns the number of read views now open.
func (b *Backend) OpenReads() int64 { return b.openReads.Load() }

// Buckets returns the names of the buckets in the file or in a batch.
func (b *Backend) Buckets() []string {
	b.batchMu.Lock()
	defer b.batchMu.Unlock()
	return slices.Sorted(maps.Keys(b.buckets))
}

// Size returns the size of the bbolt file in bytes, as of the last commit.
func (b *Backend) Size() int64 { return b.size.Load() }

// SizeInUse returns the bytes of the file holding live pages: the size less
// the free pages, which a defragmentation would give back.
func (b *Backend) SizeInUse() int64 {
	b.dbMu.RLock()
	defer b.dbMu.RUnlock()
	return boltfile.SizeInUse(b.db, b.Size())
}

// committedView commits the open batch and begins a read transaction on
// the file, which then holds every write made so far. The caller must roll
// it back.
func (b *Backend) committedView() (*bolt.Tx, error) {
	if err := b.ForceCommit(); err != nil {
		return nil, err
	}
	b.dbMu.RLock()
	defer b.dbMu.RUnlock()
	return b.db.Begin(false)
}

// Hash returns the CRC-32 (Castagnoli) of every bucket name, key and value
// in the file, except the keys listed in ignore (bucket name → keys), as
// etcd's Maintenance.Hash computes it.
func (b *Backend) Hash(ignore map[string][]string) (uint32, error) {
	tx, err := b.committedView()
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	return boltfile.HashBuckets(tx, ignore)
}

// WriteSnapshot commits the open batch and streams a consistent copy of the
// whole bbolt file to w, returning the bytes written.
func (b *Backend) WriteSnapshot(w io.Writer) (int64, error) {
	snap, err := b.OpenSnapshot()
	if err != nil {
		return 0, err
	}
	defer snap.Close()
	return snap.WriteTo(w)
}

// Snapshot is a consistent view of the whole file, as of the commit that
// OpenSnapshot made: what Get reads from it is what WriteTo streams.
type Snapshot struct{ tx *bolt.Tx }

// OpenSnapshot commits the open batch and opens a view of the file as it
// is then. The caller must close it.
func (b *Backend) OpenSnapshot() (*Snapshot, error) {
	tx, err := b.committedView()
	if err != nil {
		return nil, err
	}
	return &Snapshot{tx: tx}, nil
}

// Get returns a copy of the value of key in bucket, nil if either is absent.
func (s *Snapshot) Get(bucket, key []byte) []byte {
	bk := s.tx.Bucket(bucket)
	if bk == nil {
		return nil
	}
	if v := bk.Get(key); v != nil {
		return bytes.Clone(v)
	}
	return nil
}

// WriteTo streams the file as of the view to w.
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) { return s.tx.WriteTo(w) }

// Close releases the view.
func (s *Snapshot) Close() error { return s.tx.Rollback() }

// SnapshotSize returns the size a WriteSnapshot would write now.
func (b *Backend) SnapshotSize() int64 { return b.Size() }

// Defrag rewrites the file without free pages, without stopping the
// world: commits wait while the file is copied, so it does not change, but
// writers go on filling the open batch and readers read the file and the
// batches; only the swap of the file for its copy holds them back, for as
// long as a pointer takes to change. The original file stays intact until
// the copy is complete and synced.
func (b *Backend) Defrag() error {
	b.defrags.Add(1) // before commitMu, so that CommitUnlessBusy sees it
	defer b.defrags.Add(-1)
	b.commitMu.Lock()
	defer b.commitMu.Unlock()
	if err := b.commitHeld(); err != nil {
		return err
	}
	tmp := b.cfg.Path + ".defrag"
	os.Remove(tmp)
	failpoint.Hit("defragBeforeCopy")
	b.dbMu.RLock()
	err := boltfile.CompactTo(b.db, tmp, 0o600, true)
	b.dbMu.RUnlock()
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("defrag: %w", err) // the original file is untouched: carry on with it
	}
	failpoint.Hit("defragBeforeRename")
	db, err := b.swapFile(tmp)
	if err != nil {
		b.batchMu.Lock()
		b.failed = err
		b.batchMu.Unlock()
		return err
	}
	return b.refreshSize(db)
}

// swapFile renames the copy at tmp over the file and opens it in the old
// one's place. Commits wait (commitMu is held), so both hold the same
// data: views go on with the old file until the new one is open, and the
// old one is closed once its last view ends.
func (b *Backend) swapFile(tmp string) (*bolt.DB, error) {
	// A handle on the old file, so that its blocks can be freed a slice at
	// a time once bbolt has let go of it (releaseFile). Without one, the
	// old file is freed all at once when bbolt closes it: 400 MB freed
	// (and discarded, on a file system mounted with discard) in one
	// journal commit, which every fsync of the WAL then waited for.
	held, herr := os.OpenFile(b.cfg.Path, os.O_RDWR, 0)
	if herr != nil {
		held = nil // the old file is freed at its close, all at once
	}
	if err := os.Rename(tmp, b.cfg.Path); err != nil {
		if held != nil {
			held.Close()
		}
		return nil, fmt.Errorf("defrag %s: replace: %w", b.cfg.Path, err)
	}
	// The old file's lock is on its inode, which the rename let go of.
	// Opening reads the whole file (to find its free pages): out of the lock.
	db, err := openBolt(b.cfg)
	if err != nil {
		if held != nil {
			held.Close()
		}
		return nil, err
	}
	b.dbMu.Lock()
	old := b.db
	b.db = db
	b.dbMu.Unlock()
	b.retired.Add(1)
	go func() {
		defer b.retired.Done()
		dropMappedPages(old)
		if err := old.Close(); err != nil {
			b.cfg.Logger.Warn("closing the file a defragmentation replaced", "path", b.cfg.Path, "err", err)
		}
		if held != nil {
			b.releaseFile(held)
		}
	}()
	return db, nil
}

// Freeing a replaced file: releaseStep bytes at a time, at least
// releasePause apart, and releaseIdle times as long as the step took. On a
// file system mounted with discard, freeing 16 MB at a time took up to
// 100 ms a step, and 16 MB every 20 ms made the journal commits that a WAL
// fsync waits for 100–160 ms long every 2 s; 40 MB a second (3.7 GB in 90 s)
// leaves them short.
const (
	releaseStep  = 4 << 20
	releasePause = 100 * time.Millisecond
	releaseIdle  = 3
)

// releaseFile frees the blocks of f, a file no name refers to any more, a
// slice at a time from its end, then closes it: each fsync of the WAL
// meanwhile waits for the freeing of one slice at most. When the backend
// closes, the rest is freed at once.
func (b *Backend) releaseFile(f *os.File) {
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return
	}
	for size := fi.Size(); size > 0; {
		size = max(0, size-releaseStep)
		start := time.Now()
		if err := f.Truncate(size); err != nil {
			return
		}
		select {
		case <-b.stop:
			return
		case <-time.After(max(releasePause, releaseIdle*time.Since(start))):
		}
	}
}

// CommitUnlessBusy is ForceCommit, unless a defragmentation or another
// commit holds the file: this commit would wait for its end, so it returns
// false at once instead. After a defragmentation of a 3.7 GB db, the
// commit of the writes made during it took 120 ms, and a raft snapshot
// that waited for it held up the apply loop, and every write, as long.
// With overdue it waits for another commit (never for a
// defragmentation): on a disk so slow that commits follow each other,
// the snapshot still comes.
func (b *Backend) CommitUnlessBusy(overdue bool) (bool, error) {
	if b.defrags.Load() > 0 {
		return false, nil
	}
	if overdue {
		b.commitMu.Lock()
	} else if !b.commitMu.TryLock() {
		return false, nil
	}
	defer b.commitMu.Unlock()
	return true, b.commitHeld()
}

// syncFreelist writes bbolt's list of free pages into the file, in an
// empty transaction before a clean close of a file the backend wrote to. The backend's commits leave the
// list out (NoFreelistSync: each would write it), so bbolt's next open
// would walk every page of the file to find the free ones, 3-4 s of a
// restart at 10 million keys, on one core; with the list in the file it
// reads the list. The first commit after that open leaves it out again and
// frees its pages. A failure costs the next open its walk only.
func (b *Backend) syncFreelist() {
	b.db.NoFreelistSync = false
	defer func() { b.db.NoFreelistSync = true }()
	if err := b.db.Update(func(*bolt.Tx) error { return nil }); err != nil {
		b.cfg.Logger.Warn("could not write the list of free pages at close; the next open rebuilds it",
			"path", b.cfg.Path, "err", err)
	}
}

// Close commits the open batch and closes the file.
func (b *Backend) Close() error {
	b.commitMu.Lock()
	b.batchMu.Lock()
	if b.closed {
		b.batchMu.Unlock()
		b.commitMu.Unlock()
		return nil
	}
	err := b.commitLocked()
	b.closed = true
	committed := b.committed
	b.batchMu.Unlock()
	b.commitMu.Unlock()
	close(b.stop)
	<-b.done
	b.dbMu.Lock()
	defer b.dbMu.Unlock()
	if err == nil && committed {
		b.syncFreelist()
	}
	if cerr := b.db.Close(); err == nil {
		err = cerr
	}
	b.retired.Wait()
	return err
}
