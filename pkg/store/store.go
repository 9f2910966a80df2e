// Package store is cairn's multi-version key-value store: revisions, a key
// index of generations, a bbolt backend in etcd's layout, compaction, hashing
// and watches. It is usable on its own; the server drives it from the raft
// apply loop.
package store

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/keyindex"
	"github.com/cairnkv/cairn/pkg/kvcodec"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Config configures a Store.
type Config struct {
	Backend backend.Config
	// CompactionBatchLimit is the number of revisions removed per backend
	// batch during a compaction; reads and writes run between batches.
	CompactionBatchLimit int
	// CompactionPause is the pause between two compaction batches.
	CompactionPause time.Duration
	Logger          *slog.Logger
	// Stats receives the store's counts and durations (stats.go); nil:
	// the store keeps its own.
	Stats *Stats
}

// Store is the multi-version key-value store. Its methods are safe for
// concurrent use; writes are serialised.
type Store struct {
	cfg    Config
	log    *slog.Logger
	b      *backend.Backend
	index  *keyindex.Index
	leases *leaseIndex

	// mu is held shared by every read and exclusively while a compaction
	// moves the compacted revision and prunes the index, so a read sees
	// either the old history or the new compaction point, never a mix.
	mu         sync.RWMutex
	compactRev int64 // guarded by mu

	writeMu    sync.Mutex // one write transaction at a time
	currentRev atomic.Int64
	keys       atomic.Int64 // that exist at currentRev (Keys)
	stats      *Stats

	consistentIndex atomic.Uint64
	term            atomic.Uint64

	compactor *compactor
	watch     *watchHub
	// compactionHashes are the HashKV answers for the revisions of the
	// last compactions, as they were before each (see HashKV).
	compactionHashes compactionHashes

	closeOnce sync.Once
}

// Open opens or creates the store in the bbolt file cfg.Backend.Path and
// rebuilds the key index from it. A file that is not an etcd or cairn data
// file, or whose contents do not decode, is refused and left untouched.
func Open(cfg Config) (*Store, error) {
	if cfg.CompactionBatchLimit <= 0 {
		cfg.CompactionBatchLimit = 1000
	}
	if cfg.CompactionPause <= 0 {
		cfg.CompactionPause = 10 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Backend.Logger == nil {
		cfg.Backend.Logger = cfg.Logger
	}
	if cfg.Stats == nil {
		cfg.Stats = new(Stats)
	}
	if cfg.Backend.OnCommit == nil {
		cfg.Backend.OnCommit = cfg.Stats.OnCommit
	}
	if cfg.Backend.OnBoltCommit == nil {
		cfg.Backend.OnBoltCommit = cfg.Stats.OnBoltCommit
	}
	cfg.Backend.DenseBuckets = append(cfg.Backend.DenseBuckets, string(BucketKey))
	b, err := backend.Open(cfg.Backend)
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, log: cfg.Logger, b: b, index: keyindex.New(), leases: newLeaseIndex(), stats: cfg.Stats}
	if err := s.init(); err != nil {
		b.Close()
		return nil, fmt.Errorf("open store %s: %w", cfg.Backend.Path, err)
	}
	s.watch = newWatchHub(s)
	s.compactor = newCompactor(s)
	if err := s.compactor.resume(); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", cfg.Backend.Path, err)
	}
	return s, nil
}

// init checks the file, creates the buckets of a new one and rebuilds the
// in-memory state. bbolt panics on some corrupt pages; those become errors.
func (s *Store) init() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("corrupt bbolt file: %v", r)
		}
	}()
	if err := s.checkLayout(); err != nil {
		return err
	}
	// Rebuild before writing anything, so that a file that does not decode
	// is left as it was.
	if err := s.rebuild(); err != nil {
		return err
	}
	wt := s.b.Write()
	for _, bk := range [][]byte{BucketKey, BucketMeta, BucketLease} {
		if err := wt.CreateBucket(bk); err != nil {
			wt.Unlock()
			return err
		}
	}
	if wt.Get(BucketMeta, MetaStorageVersion) == nil {
		if err := wt.Put(BucketMeta, MetaStorageVersion, []byte(StorageVersion)); err != nil {
			wt.Unlock()
			return err
		}
	}
	if err := wt.Unlock(); err != nil {
		return err
	}
	return s.b.ForceCommit()
}

// StorageVersion is written to a new file's meta bucket, as etcd 3.7 does.
const StorageVersion = "3.7.0"

// checkLayout refuses a bbolt file that holds buckets but no meta bucket:
// it belongs to some other program.
func (s *Store) checkLayout() error {
	names := s.b.Buckets()
	if len(names) > 0 && !slices.Contains(names, string(BucketMeta)) {
		return fmt.Errorf("not an etcd or cairn data file: no %q bucket (buckets: %q)", BucketMeta, names)
	}
	return nil
}

// rebuild restores the revision counters, the key index and the lease
// attachments from the backend.
func (s *Store) rebuild() error {
	rt := s.b.Read()
	defer rt.Close()
	meta := func(key []byte) (uint64, error) {
		v, ok := rt.Get(BucketMeta, key)
		if !ok {
			return 0, nil
		}
		return decodeUint64(string(key), v)
	}
	ci, err := meta(MetaConsistentIndex)
	if err != nil {
		return err
	}
	term, err := meta(MetaTerm)
	if err != nil {
		return err
	}
	s.consistentIndex.Store(ci)
	s.term.Store(term)

	scheduled, err := s.readCompactRev(rt, MetaScheduledCompactRev)
	if err != nil {
		return err
	}
	s.compactRev = scheduled

	current := int64(1)
	kv := new(mvccpb.KeyValue)
	loader := keyindex.NewLoader()
	defer loader.Stop() // before rt closes: the loader's keys are the db's memory
	var restoreErr error
	err = rt.Range(BucketKey, nil, nil, func(k, v []byte) bool {
		rev, tomb, err := restoreRevision(loader, k, v, kv)
		if err != nil {
			restoreErr = err
			return false
		}
		s.leases.restore(kv.Key, kv.Lease, tomb)
		current = max(current, rev.Main)
		return true
	})
	if err == nil {
		err = restoreErr
	}
	if err != nil {
		return fmt.Errorf("rebuild index: %w", err)
	}
	s.index = loader.Index()
	if s.compactRev > 0 {
		s.index.Compact(s.compactRev)
	}
	s.currentRev.Store(max(current, s.compactRev))
	s.keys.Store(int64(s.index.CountAt(nil, []byte{0}, s.currentRev.Load())))
	return nil
}

// restoreRevision replays one entry of the key bucket into loader, decoding its
// value into kv, whose Key and Value are then in v. A KeyValue with an empty
// key is accepted: etcd's snapshot restore --bump-revision writes one to
// mark the bumped revision, and etcd counts it as a key.
func restoreRevision(loader *keyindex.Loader, k, v []byte, kv *mvccpb.KeyValue) (Revision, bool, error) {
	rev, tomb, err := ParseRevisionKey(k)
	if err != nil {
		return Revision{}, false, err
	}
	if err := kvcodec.Decode(v, kv); err != nil {
		return Revision{}, false, fmt.Errorf("revision %s: value is not a KeyValue: %w", rev, err)
	}
	key := kv.Key
	if key == nil {
		key = []byte{}
	}
	loader.Add(key, rev, tomb, kv.CreateRevision, kv.Version)
	return rev, tomb, nil
}

// readCompactRev reads a 17-byte revision from the meta bucket (0 if absent).
func (s *Store) readCompactRev(rt *backend.ReadTx, key []byte) (int64, error) {
	v, ok := rt.Get(BucketMeta, key)
	if !ok {
		return 0, nil
	}
	rev, _, err := ParseRevisionKey(v)
	if err != nil {
		return 0, fmt.Errorf("meta %s: %w", key, err)
	}
	return rev.Main, nil
}

// Rev returns the current revision.
func (s *Store) Rev() int64 { return s.currentRev.Load() }

// CompactRev returns the revision of the latest compaction (0 if none).
func (s *Store) CompactRev() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.compactRev
}

// ConsistentIndex returns the raft index and term of the last entry applied
// to the store, as recorded with SetConsistentIndex.
func (s *Store) ConsistentIndex() (index, term uint64) {
	return s.consistentIndex.Load(), s.term.Load()
}

// Backend gives access to the bbolt file, for the buckets that other
// packages own (lease, auth, members, ...).
func (s *Store) Backend() *backend.Backend { return s.b }

// Close stops the store's background work and closes the file. A pending
// compaction resumes on the next Open.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		if s.watch != nil {
			s.watch.close()
		}
		if s.compactor != nil {
			s.compactor.stop()
		}
		err = s.b.Close()
	})
	return err
}
