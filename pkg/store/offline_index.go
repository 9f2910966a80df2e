package store

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/pkg/boltfile"
	"github.com/cairnkv/cairn/pkg/keyindex"
)

// OfflineIndex is the key index of a bbolt data file rebuilt without opening
// a Store, so that nothing is written to the file. It answers what the
// offline tools ask: the current and compacted revisions, the number of live
// keys, and HashKV.
//
// Unlike Open, it accepts a KeyValue with an empty key: etcd's snapshot
// restore --bump-revision writes an empty value at the bumped revision to
// mark it, and etcd counts it as a key.
type OfflineIndex struct {
	db         *boltfile.DB
	index      *keyindex.Index
	rev        int64
	compactRev int64
}

// ReadIndex rebuilds the key index of a bbolt data file opened read-only
// from its key and meta buckets.
func ReadIndex(o *boltfile.DB) (*OfflineIndex, error) {
	oi := &OfflineIndex{db: o, index: keyindex.New()}
	err := o.View(func(tx *bolt.Tx) error {
		compactRev, err := offlineCompactRev(tx, MetaScheduledCompactRev)
		if err != nil {
			return err
		}
		oi.compactRev = compactRev
		current := int64(1)
		kb := tx.Bucket(BucketKey)
		if kb == nil {
			oi.rev = max(current, compactRev)
			return nil
		}
		kv := new(mvccpb.KeyValue)
		loader := keyindex.NewLoader()
		defer loader.Stop() // before the transaction ends: the loader's keys are the db's memory
		err = kb.ForEach(func(k, v []byte) error {
			rev, _, err := restoreRevision(loader, k, v, kv)
			current = max(current, rev.Main)
			return err
		})
		if err != nil {
			return fmt.Errorf("rebuild index of %s: %w", o.Path(), err)
		}
		oi.rev = max(current, compactRev)
		oi.index = loader.Index()
		return nil
	})
	if err != nil {
		return nil, err
	}
	if oi.compactRev > 0 {
		oi.index.Compact(oi.compactRev)
	}
	return oi, nil
}

// offlineCompactRev reads a 17-byte revision from the meta bucket (0 if
// the bucket or the key is absent).
func offlineCompactRev(tx *bolt.Tx, key []byte) (int64, error) {
	mb := tx.Bucket(BucketMeta)
	if mb == nil {
		return 0, nil
	}
	v := mb.Get(key)
	if v == nil {
		return 0, nil
	}
	rev, _, err := ParseRevisionKey(v)
	if err != nil {
		return 0, fmt.Errorf("meta %s: %w", key, err)
	}
	return rev.Main, nil
}

// Rev returns the file's current revision.
func (oi *OfflineIndex) Rev() int64 { return oi.rev }

// CompactRev returns the revision of the latest scheduled compaction.
func (oi *OfflineIndex) CompactRev() int64 { return oi.compactRev }

// LiveKeys returns the number of keys that exist at the current revision.
func (oi *OfflineIndex) LiveKeys() int {
	return oi.index.CountAt([]byte{}, []byte{0}, oi.rev)
}

// HashKV computes what Store.HashKV computes, read-only: the CRC-32
// (Castagnoli) of the key bucket's name and of the revisions up to rev
// (0: the current one) that a member's HashKV covers.
func (oi *OfflineIndex) HashKV(rev int64) (KVHash, error) {
	rev, err := readRev(rev, oi.rev, oi.compactRev)
	if err != nil {
		return KVHash{}, err
	}
	var sum uint32
	err = oi.db.View(func(tx *bolt.Tx) error {
		var err error
		sum, err = hashKV(oi.index, oi.compactRev, rev, func(upper []byte, fn func(k, v []byte) bool) error {
			kb := tx.Bucket(BucketKey)
			if kb == nil {
				return nil
			}
			c := kb.Cursor()
			for k, v := c.First(); k != nil && bytes.Compare(k, upper) < 0 && fn(k, v); k, v = c.Next() {
			}
			return nil
		})
		return err
	})
	if err != nil {
		return KVHash{}, err
	}
	return KVHash{Hash: sum, HashRevision: rev, CompactRevision: reportedCompactRev(oi.compactRev)}, nil
}
