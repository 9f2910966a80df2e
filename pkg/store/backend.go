package store

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BackendConfig configures the bbolt file behind a store.
type BackendConfig struct {
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
}

// Defaults of etcd: a batch commits after 100 ms or 10000 writes.
const (
	DefaultBatchInterval   = 100 * time.Millisecond
	DefaultBatchLimit      = 10000
	defaultInitialMmapSize = 64 << 20
)

func (c *BackendConfig) withDefaults() {
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

// Backend is a bbolt file written in batches: writes go to one open bbolt
// write transaction that commits on an interval or after a number of writes.
// Until then they sit in a write buffer that readers consult first, so a
// write is visible as soon as it is made, and readers never wait for a commit.
type Backend struct {
	cfg BackendConfig

	// dbMu is held shared by readers and exclusively while the file is
	// swapped (defragmentation, close).
	dbMu sync.RWMutex
	db   *bolt.DB

	// batchMu serialises writers and commits.
	batchMu sync.Mutex
	tx      *bolt.Tx
	pending int
	failed  error // a commit failed: the batch is lost and every later write fails

	// bufMu guards buf, which a commit replaces (never clears) so that a
	// reader that captured the previous one keeps a consistent view.
	bufMu sync.RWMutex
	buf   *writeBuffer

	stop chan struct{}
	done chan struct{}
}

// ErrBackendClosed is returned by a backend after Close.
var ErrBackendClosed = errors.New("backend is closed")

// OpenBackend opens or creates the bbolt file at cfg.Path and starts its
// commit timer.
func OpenBackend(cfg BackendConfig) (*Backend, error) {
	cfg.withDefaults()
	db, err := openBolt(cfg.Path, cfg.InitialMmapSize)
	if err != nil {
		return nil, err
	}
	b := &Backend{cfg: cfg, db: db, buf: newWriteBuffer(), stop: make(chan struct{}), done: make(chan struct{})}
	if b.tx, err = db.Begin(true); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: begin write: %w", cfg.Path, err)
	}
	go b.commitLoop()
	return b, nil
}

func openBolt(path string, mmapSize int) (db *bolt.DB, err error) {
	// bbolt panics on some kinds of corruption; report them as errors.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("open %s: corrupt bbolt file: %v", path, r)
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{
		Timeout:         5 * time.Second,
		InitialMmapSize: mmapSize,
		NoFreelistSync:  true,
		FreelistType:    bolt.FreelistMapType,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
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
			b.batchMu.Lock()
			if b.pending > 0 {
				b.commitLocked()
			}
			b.batchMu.Unlock()
		}
	}
}

// commitLocked commits the open batch and starts the next one. batchMu is held.
func (b *Backend) commitLocked() error {
	if b.failed != nil || b.pending == 0 {
		return b.failed // nothing to commit: leave the file untouched
	}
	if err := b.tx.Commit(); err != nil {
		b.failed = fmt.Errorf("commit %s: %w", b.cfg.Path, err)
		b.cfg.Logger.Error("backend commit failed; later writes will fail", "path", b.cfg.Path, "err", err)
		return b.failed
	}
	// Only now are the buffered writes in bbolt; a reader that opened its
	// bbolt transaction before this point still holds the old buffer.
	b.bufMu.Lock()
	b.buf = newWriteBuffer()
	b.bufMu.Unlock()
	b.pending = 0
	tx, err := b.db.Begin(true)
	if err != nil {
		b.failed = fmt.Errorf("begin write %s: %w", b.cfg.Path, err)
		return b.failed
	}
	b.tx = tx
	return nil
}

// ForceCommit commits the open batch now.
func (b *Backend) ForceCommit() error {
	b.batchMu.Lock()
	defer b.batchMu.Unlock()
	if b.tx == nil {
		return ErrBackendClosed
	}
	return b.commitLocked()
}

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
	if wt.b.tx == nil {
		return ErrBackendClosed
	}
	return wt.b.failed
}

// CreateBucket creates bucket if it does not exist.
func (wt *WriteTx) CreateBucket(bucket []byte) error {
	if err := wt.usable(); err != nil {
		return err
	}
	if wt.b.tx.Bucket(bucket) != nil {
		return nil
	}
	if _, err := wt.b.tx.CreateBucket(bucket); err != nil {
		return fmt.Errorf("create bucket %q: %w", bucket, err)
	}
	wt.writes++
	return nil
}

// Put sets key to value in bucket. value must not be modified afterwards.
func (wt *WriteTx) Put(bucket, key, value []byte) error {
	if err := wt.usable(); err != nil {
		return err
	}
	bk := wt.b.tx.Bucket(bucket)
	if bk == nil {
		return fmt.Errorf("put %q: bucket %q does not exist", key, bucket)
	}
	if err := bk.Put(key, value); err != nil {
		return fmt.Errorf("put %q in bucket %q: %w", key, bucket, err)
	}
	wt.buffer(bucket, key, bufferedValue{value: value})
	return nil
}

// Delete removes key from bucket.
func (wt *WriteTx) Delete(bucket, key []byte) error {
	if err := wt.usable(); err != nil {
		return err
	}
	bk := wt.b.tx.Bucket(bucket)
	if bk == nil {
		return fmt.Errorf("delete %q: bucket %q does not exist", key, bucket)
	}
	if err := bk.Delete(key); err != nil {
		return fmt.Errorf("delete %q in bucket %q: %w", key, bucket, err)
	}
	wt.buffer(bucket, key, bufferedValue{deleted: true})
	return nil
}

func (wt *WriteTx) buffer(bucket, key []byte, v bufferedValue) {
	wt.b.bufMu.Lock()
	wt.b.buf.set(bucket, key, v)
	wt.b.bufMu.Unlock()
	wt.writes++
}

// Get reads key from bucket, seeing this batch's writes.
func (wt *WriteTx) Get(bucket, key []byte) []byte {
	if wt.usable() != nil {
		return nil
	}
	bk := wt.b.tx.Bucket(bucket)
	if bk == nil {
		return nil
	}
	return bk.Get(key)
}

// Range calls fn for each key of bucket in [start, end) (end nil: to the
// end) in order, until fn returns false.
func (wt *WriteTx) Range(bucket, start, end []byte, fn func(k, v []byte) bool) error {
	if err := wt.usable(); err != nil {
		return err
	}
	bk := wt.b.tx.Bucket(bucket)
	if bk == nil {
		return nil
	}
	c := bk.Cursor()
	for k, v := c.Seek(start); k != nil && inRange(k, start, end); k, v = c.Next() {
		if !fn(k, v) {
			break
		}
	}
	return nil
}

// Unlock ends the writer's turn. The batch commits now if it reached the
// batch limit; the error is that commit's.
func (wt *WriteTx) Unlock() error {
	b := wt.b
	defer b.batchMu.Unlock()
	b.pending += wt.writes
	if b.pending >= b.cfg.BatchLimit && b.tx != nil {
		return b.commitLocked()
	}
	return nil
}

// Read opens a consistent view of the backend: committed data plus the
// writes buffered when the view opened. The caller must Close it.
func (b *Backend) Read() *ReadTx {
	b.dbMu.RLock()
	b.bufMu.RLock()
	defer b.bufMu.RUnlock()
	tx, err := b.db.Begin(false)
	if err != nil {
		b.dbMu.RUnlock()
		return &ReadTx{err: fmt.Errorf("begin read %s: %w", b.cfg.Path, err)}
	}
	return &ReadTx{b: b, tx: tx, buf: b.buf}
}

// ReadTx is a read view of the backend. Values it returns are valid until Close.
type ReadTx struct {
	b   *Backend
	tx  *bolt.Tx
	buf *writeBuffer
	err error
}

// Get reads key from bucket.
func (rt *ReadTx) Get(bucket, key []byte) ([]byte, bool) {
	if rt.err != nil {
		return nil, false
	}
	rt.b.bufMu.RLock()
	bv, ok := rt.buf.get(bucket, key)
	rt.b.bufMu.RUnlock()
	if ok {
		return bv.value, !bv.deleted
	}
	bk := rt.tx.Bucket(bucket)
	if bk == nil {
		return nil, false
	}
	v := bk.Get(key)
	return v, v != nil
}

// Range calls fn for each key of bucket in [start, end) (end nil: to the
// end) in key order, buffered writes merged in, until fn returns false.
func (rt *ReadTx) Range(bucket, start, end []byte, fn func(k, v []byte) bool) error {
	if rt.err != nil {
		return rt.err
	}
	rt.b.bufMu.RLock()
	bufKeys := rt.buf.sortedKeysIn(bucket, start, end)
	bufVals := make([]bufferedValue, len(bufKeys))
	for i, k := range bufKeys {
		bufVals[i], _ = rt.buf.get(bucket, []byte(k))
	}
	rt.b.bufMu.RUnlock()

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

// Close ends the view.
func (rt *ReadTx) Close() {
	if rt.err != nil || rt.tx == nil {
		return
	}
	rt.tx.Rollback()
	rt.tx = nil
	rt.b.dbMu.RUnlock()
}

// Size returns the size of the bbolt file in bytes.
func (b *Backend) Size() int64 {
	b.batchMu.Lock()
	defer b.batchMu.Unlock()
	if b.tx == nil {
		return 0
	}
	return b.tx.Size()
}

// SizeInUse returns the bytes of the file holding live pages: the size less
// the free pages, which a defragmentation would give back.
func (b *Backend) SizeInUse() int64 {
	b.batchMu.Lock()
	defer b.batchMu.Unlock()
	if b.tx == nil {
		return 0
	}
	st := b.db.Stats()
	return b.tx.Size() - int64(st.FreePageN+st.PendingPageN)*int64(b.db.Info().PageSize)
}

// Hash returns the CRC-32 (Castagnoli) of every bucket name, key and value
// in the file, except the keys listed in ignore (bucket name → keys), as
// etcd's Maintenance.Hash computes it.
func (b *Backend) Hash(ignore map[string][]string) (uint32, error) {
	if err := b.ForceCommit(); err != nil {
		return 0, err
	}
	b.dbMu.RLock()
	defer b.dbMu.RUnlock()
	var sum uint32
	err := b.db.View(func(tx *bolt.Tx) error {
		var err error
		sum, err = hashBuckets(tx, ignore)
		return err
	})
	return sum, err
}

// WriteSnapshot commits the open batch and streams a consistent copy of the
// whole bbolt file to w, returning the bytes written.
func (b *Backend) WriteSnapshot(w io.Writer) (int64, error) {
	if err := b.ForceCommit(); err != nil {
		return 0, err
	}
	b.dbMu.RLock()
	defer b.dbMu.RUnlock()
	var n int64
	err := b.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

// SnapshotSize returns the size a WriteSnapshot would write now.
func (b *Backend) SnapshotSize() int64 { return b.Size() }

// Defrag rewrites the file without free pages. Writers and readers wait
// while it runs; the original file stays intact until the copy is complete.
func (b *Backend) Defrag() error {
	b.batchMu.Lock()
	defer b.batchMu.Unlock()
	if b.tx == nil {
		return ErrBackendClosed
	}
	if err := b.commitLocked(); err != nil {
		return err
	}
	b.dbMu.Lock()
	defer b.dbMu.Unlock()
	b.tx.Rollback()
	b.tx = nil
	if err := defragFile(b.db, b.cfg.Path); err != nil {
		// the original file is untouched: carry on with it
		b.tx, _ = b.db.Begin(true)
		return err
	}
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("defrag %s: close: %w", b.cfg.Path, err)
	}
	tmp := b.cfg.Path + ".defrag"
	if err := os.Rename(tmp, b.cfg.Path); err != nil {
		return fmt.Errorf("defrag %s: replace: %w", b.cfg.Path, err)
	}
	db, err := openBolt(b.cfg.Path, b.cfg.InitialMmapSize)
	if err != nil {
		b.failed = err
		return err
	}
	b.db = db
	if b.tx, err = db.Begin(true); err != nil {
		b.failed = err
		return err
	}
	return nil
}

// defragFile copies db compactly into path+".defrag" and syncs it.
func defragFile(db *bolt.DB, path string) error {
	tmp := path + ".defrag"
	os.Remove(tmp)
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return fmt.Errorf("defrag %s: create copy: %w", path, err)
	}
	if err := bolt.Compact(dst, db, 64<<20); err != nil {
		dst.Close()
		os.Remove(tmp)
		return fmt.Errorf("defrag %s: copy: %w", path, err)
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("defrag %s: close copy: %w", path, err)
	}
	return nil
}

// Close commits the open batch and closes the file.
func (b *Backend) Close() error {
	b.batchMu.Lock()
	if b.tx == nil {
		b.batchMu.Unlock()
		return nil
	}
	close(b.stop)
	err := b.commitLocked()
	if b.tx != nil { // empty, or the commit failed
		b.tx.Rollback()
	}
	b.tx = nil
	b.batchMu.Unlock()
	<-b.done
	b.dbMu.Lock()
	defer b.dbMu.Unlock()
	if cerr := b.db.Close(); err == nil {
		err = cerr
	}
	return err
}
