package boltfile

import (
	"errors"
	"fmt"
	"hash/crc32"
	"runtime/debug"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// ErrCorrupt: reading the bbolt file hit a page that is not what the
// b+tree says it should be (bbolt panics there; DB reports it).
var ErrCorrupt = errors.New("corrupt bbolt file")

// ErrLocked: another process holds the bbolt file's lock, typically a
// running member.
var ErrLocked = errors.New("db file is locked by another process (is a member running on it?)")

// DB is a bbolt data file opened read-only for offline tools: nothing is
// ever written to it, not even a transaction id. Damage that makes bbolt
// panic or fault is returned as an error wrapping ErrCorrupt.
type DB struct {
	path string
	db   *bolt.DB
}

// Open checks the meta pages of the file at path (see checkFile) and opens
// it read-only, waiting at most lockTimeout for a shared lock (0: do not
// wait).
func Open(path string, lockTimeout time.Duration) (odb *DB, err error) {
	if _, err := checkFile(path); err != nil {
		return nil, err
	}
	if lockTimeout <= 0 {
		lockTimeout = time.Millisecond
	}
	err = guardCorruption(path, func() error {
		db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: lockTimeout})
		if err != nil {
			if errors.Is(err, bolterrors.ErrTimeout) {
				return fmt.Errorf("open db %s: %w", path, ErrLocked)
			}
			return fmt.Errorf("open db %s: %w", path, err)
		}
		odb = &DB{path: path, db: db}
		return nil
	})
	return odb, err
}

// Path returns the file's path.
func (o *DB) Path() string { return o.path }

// Close releases the file.
func (o *DB) Close() error { return o.db.Close() }

// View runs fn in a read transaction. A bbolt panic or a memory fault while
// fn runs (both mean a damaged page) becomes an error wrapping ErrCorrupt,
// which names the damaged page and where it was reached from.
func (o *DB) View(fn func(tx *bolt.Tx) error) error {
	err := guardCorruption(o.path, func() error { return o.db.View(fn) })
	if errors.Is(err, ErrCorrupt) {
		if perr := CheckPages(o.path); perr != nil {
			return perr
		}
	}
	return err
}

// guardCorruption runs fn with memory faults turned into panics, and turns
// any panic into an error wrapping ErrCorrupt.
func guardCorruption(path string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("db %s: %w: %v", path, ErrCorrupt, r)
		}
	}()
	return fn()
}

// Buckets returns the names of the top-level buckets in key order.
func (o *DB) Buckets() ([]string, error) {
	var names []string
	err := o.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, string(name))
			return nil
		})
	})
	return names, err
}

// Size returns the size of the file as bbolt sees it (a snapshot file's
// trailer is not part of it).
func (o *DB) Size() (int64, error) {
	var size int64
	err := o.View(func(tx *bolt.Tx) error {
		size = tx.Size()
		return nil
	})
	return size, err
}

// SizeInUse returns the bytes of db that hold live pages: size (the
// file's size as bbolt sees it, as of the last commit) less the free pages,
// pending ones included, which a defragmentation gives back; etcd's
// dbSizeInUse. db's free list must be loaded: opened for writing, or
// read-only with PreLoadFreelist.
func SizeInUse(db *bolt.DB, size int64) int64 {
	st := db.Stats()
	return size - int64(st.FreePageN+st.PendingPageN)*int64(db.Info().PageSize)
}

// Hash returns the CRC-32 (Castagnoli) of every bucket name, key and value
// in key order, leaving out the keys in ignore (bucket name → keys; nil
// leaves out nothing). With store.HashIgnores it is Maintenance.Hash; with
// nil it is the hash `snapshot status` prints.
func (o *DB) Hash(ignore map[string][]string) (uint32, error) {
	var sum uint32
	err := o.View(func(tx *bolt.Tx) error {
		var err error
		sum, err = HashBuckets(tx, ignore)
		return err
	})
	return sum, err
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// HashBuckets returns the CRC-32 (Castagnoli) of every bucket name, key and
// value of tx in key order, leaving out the keys in ignore (bucket name →
// keys).
func HashBuckets(tx *bolt.Tx, ignore map[string][]string) (uint32, error) {
	h := crc32.New(castagnoli)
	err := tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
		h.Write(name)
		skip := ignore[string(name)]
		return bk.ForEach(func(k, v []byte) error {
			if slices.Contains(skip, string(k)) {
				return nil
			}
			h.Write(k)
			h.Write(v)
			return nil
		})
	})
	return h.Sum32(), err
}
