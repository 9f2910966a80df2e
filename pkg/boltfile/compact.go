package boltfile

import (
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// compactTxBytes is how many bytes of keys and values one write
// transaction of a compaction copies before it commits: it bounds the
// memory of the pages a transaction holds dirty, and how much the file's
// sync after each commit writes out (see CompactTo).
const compactTxBytes = 16 << 20

// CompactTo copies every bucket of src, keys in order into full pages, to
// a new bbolt file at dst (which must not exist), syncs it and closes it.
// src is only read, through one read transaction: the copy is of one
// point in time even if src is written meanwhile. A copy that did not
// return nil must be thrown away: its transactions are not synced as they
// commit. The file is synced after each commit instead, beside the copy of
// the next transaction, and once more at the end: the dirty pages go out
// some 16 MB at a time. Left to one sync at the end (or to bbolt's sync
// each time the file grows), hundreds of megabytes went out at once, and
// every fsync of the WAL of a member defragmenting online waited for them
// (an ext4 journal commit writes out the data of all files first).
func CompactTo(src *bolt.DB, dst string, mode os.FileMode) error {
	stx, err := src.Begin(false)
	if err != nil {
		return fmt.Errorf("compact: read %s: %w", src.Path(), err)
	}
	defer stx.Rollback()
	out, err := bolt.Open(dst, mode, &bolt.Options{NoSync: true, NoGrowSync: true, NoFreelistSync: true,
		FreelistType: bolt.FreelistMapType, InitialMmapSize: int(stx.Size())})
	if err != nil {
		return fmt.Errorf("compact: create %s: %w", dst, err)
	}
	c := &compaction{out: out, syncs: make(chan struct{}, 1), synced: make(chan error, 1)}
	go c.syncLoop()
	err = stx.ForEach(func(name []byte, b *bolt.Bucket) error {
		return c.copyBucket([][]byte{name}, b)
	})
	if err == nil {
		err = c.commit()
	}
	close(c.syncs)
	if serr := <-c.synced; err == nil {
		err = serr
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("compact %s into %s: %w", src.Path(), dst, err)
	}
	return nil
}

// compaction is the write side of CompactTo: one open transaction of the
// copy, committed every compactTxBytes, and the file synced after each
// commit by syncLoop.
type compaction struct {
	out   *bolt.DB
	tx    *bolt.Tx
	bytes int
	// syncs asks syncLoop for a sync (closed at the end); synced has its
	// first error, or nil, once syncs is closed.
	syncs  chan struct{}
	synced chan error
}

// syncLoop syncs the file each time it is asked to, until syncs closes.
func (c *compaction) syncLoop() {
	var err error
	for range c.syncs {
		if err == nil {
			err = c.out.Sync()
		}
	}
	c.synced <- err
}

// bucket opens the bucket at path in the current transaction (creating
// it, with its sequence, if seq is given), beginning one if needed.
func (c *compaction) bucket(path [][]byte, create bool, seq uint64) (*bolt.Bucket, error) {
	if c.tx == nil {
		tx, err := c.out.Begin(true)
		if err != nil {
			return nil, err
		}
		c.tx = tx
	}
	var b *bolt.Bucket
	for i, name := range path {
		var parent interface {
			Bucket([]byte) *bolt.Bucket
			CreateBucket([]byte) (*bolt.Bucket, error)
		} = c.tx
		if b != nil {
			parent = b
		}
		next := parent.Bucket(name)
		if next == nil && create && i == len(path)-1 {
			var err error
			if next, err = parent.CreateBucket(name); err != nil {
				return nil, err
			}
			if err := next.SetSequence(seq); err != nil {
				return nil, err
			}
		}
		if next == nil {
			return nil, fmt.Errorf("bucket %q is missing from the copy", path)
		}
		b = next
	}
	// Keys come in order and are never written again: fill every page.
	b.FillPercent = 1.0
	return b, nil
}

func (c *compaction) commit() error {
	if c.tx == nil {
		return nil
	}
	err := c.tx.Commit()
	c.tx, c.bytes = nil, 0
	select {
	case c.syncs <- struct{}{}:
	default: // a sync is asked for already; it writes out this commit too
	}
	return err
}

// copyBucket copies the bucket src, at path, and the buckets nested in it.
func (c *compaction) copyBucket(path [][]byte, src *bolt.Bucket) error {
	dst, err := c.bucket(path, true, src.Sequence())
	if err != nil {
		return err
	}
	cur := src.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		if v == nil { // a nested bucket
			if err := c.copyBucket(append(path[:len(path):len(path)], k), src.Bucket(k)); err != nil {
				return err
			}
			if dst, err = c.bucket(path, false, 0); err != nil {
				return err
			}
			continue
		}
		if c.bytes >= compactTxBytes {
			if err := c.commit(); err != nil {
				return err
			}
			if dst, err = c.bucket(path, false, 0); err != nil {
				return err
			}
		}
		// k and v point into src's pages, which stay mapped while its
		// read transaction is open, so the copy's Put may keep them.
		if err := dst.Put(k, v); err != nil {
			return fmt.Errorf("bucket %q key %q: %w", path, k, err)
		}
		c.bytes += len(k) + len(v)
	}
	return nil
}
