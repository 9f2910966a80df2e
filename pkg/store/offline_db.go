package store

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// ErrCorruptDB: reading the bbolt file hit a page that is not what the
// b+tree says it should be (bbolt panics there; OfflineDB reports it).
var ErrCorruptDB = errors.New("corrupt bbolt file")

// ErrDBLocked: another process holds the bbolt file's lock, typically a
// running member.
var ErrDBLocked = errors.New("db file is locked by another process (is a member running on it?)")

// OfflineDB is a bbolt data file opened read-only for offline tools: nothing
// is ever written to it, not even a transaction id. Damage that makes bbolt
// panic or fault is returned as an error wrapping ErrCorruptDB.
type OfflineDB struct {
	path string
	db   *bolt.DB
}

// OpenOffline checks the meta pages of the file at path (see CheckBoltFile)
// and opens it read-only, waiting at most lockTimeout for a shared lock
// (0: do not wait).
func OpenOffline(path string, lockTimeout time.Duration) (odb *OfflineDB, err error) {
	if _, err := CheckBoltFile(path); err != nil {
		return nil, err
	}
	if lockTimeout <= 0 {
		lockTimeout = time.Millisecond
	}
	err = guardCorruption(path, func() error {
		db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: lockTimeout})
		if err != nil {
			if errors.Is(err, bolterrors.ErrTimeout) {
				return fmt.Errorf("open db %s: %w", path, ErrDBLocked)
			}
			return fmt.Errorf("open db %s: %w", path, err)
		}
		odb = &OfflineDB{path: path, db: db}
		return nil
	})
	return odb, err
}

// Path returns the file's path.
func (o *OfflineDB) Path() string { return o.path }

// Close releases the file.
func (o *OfflineDB) Close() error { return o.db.Close() }

// View runs fn in a read transaction. A bbolt panic or a memory fault while
// fn runs (both mean a damaged page) becomes an error wrapping ErrCorruptDB,
// which names the damaged page and where it was reached from.
func (o *OfflineDB) View(fn func(tx *bolt.Tx) error) error {
	err := guardCorruption(o.path, func() error { return o.db.View(fn) })
	if errors.Is(err, ErrCorruptDB) {
		if perr := CheckBoltPages(o.path); perr != nil {
			return perr
		}
	}
	return err
}

// guardCorruption runs fn with memory faults turned into panics, and turns
// any panic into an error wrapping ErrCorruptDB.
func guardCorruption(path string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("db %s: %w: %v", path, ErrCorruptDB, r)
		}
	}()
	return fn()
}

// Buckets returns the names of the top-level buckets in key order.
func (o *OfflineDB) Buckets() ([]string, error) {
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
func (o *OfflineDB) Size() (int64, error) {
	var size int64
	err := o.View(func(tx *bolt.Tx) error {
		size = tx.Size()
		return nil
	})
	return size, err
}

// Hash returns the CRC-32 (Castagnoli) of every bucket name, key and value
// in key order, leaving out the keys in ignore (bucket name → keys; nil
// leaves out nothing). With HashIgnores it is Maintenance.Hash; with nil it
// is the hash `snapshot status` prints.
func (o *OfflineDB) Hash(ignore map[string][]string) (uint32, error) {
	var sum uint32
	err := o.View(func(tx *bolt.Tx) error {
		var err error
		sum, err = hashBuckets(tx, ignore)
		return err
	})
	return sum, err
}
