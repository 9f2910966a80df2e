package store

import (
	"hash/crc32"
	"slices"

	bolt "go.etcd.io/bbolt"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// KVHash is the result of HashKV.
type KVHash struct {
	Hash            uint32
	HashRevision    int64
	CompactRevision int64
}

// HashKV returns the CRC-32 (Castagnoli) of the key bucket's name and of the
// revisions up to rev (0: the current one): every revision after the last
// compaction, and of those at or before it only the ones compaction keeps
// that are still their key's latest at rev (all of them if compaction keeps
// none at all). This is what etcd 3.7 computes (found by comparing with its
// etcdutl hashkv at every revision), so members of either kind that applied
// the same history agree.
func (s *Store) HashKV(rev int64) (KVHash, error) {
	r := s.Read()
	defer r.End()
	compactRev := r.compactRev
	switch {
	case rev > r.rev:
		return KVHash{}, ErrFutureRev
	case rev <= 0:
		rev = r.rev
	case rev < compactRev:
		return KVHash{}, ErrCompacted
	}
	sum, err := hashKV(s.index, compactRev, rev, func(upper []byte, fn func(k, v []byte) bool) error {
		return r.rt.Range(BucketKey, nil, upper, fn)
	})
	if err != nil {
		return KVHash{}, err
	}
	return KVHash{Hash: sum, HashRevision: rev, CompactRevision: compactRev}, nil
}

// hashKV hashes the key bucket up to rev as HashKV describes; scan calls fn
// on the bucket's entries below upper in key order.
func hashKV(index *treeIndex, compactRev, rev int64, scan func(upper []byte, fn func(k, v []byte) bool) error) (uint32, error) {
	keep, retained := index.keep(compactRev, rev)
	lower := Revision{Main: compactRev + 1}
	h := crc32.New(castagnoli)
	h.Write(BucketKey)
	var parseErr error
	err := scan(RevisionKey(Revision{Main: rev + 1}, false), func(k, v []byte) bool {
		kr, _, err := ParseRevisionKey(k)
		if err != nil {
			parseErr = err
			return false
		}
		if lower.GreaterThan(kr) && retained > 0 {
			if _, kept := keep[kr]; !kept {
				return true
			}
		}
		h.Write(k)
		h.Write(v)
		return true
	})
	if err == nil {
		err = parseErr
	}
	return h.Sum32(), err
}

// Hash returns the CRC-32 (Castagnoli) of the whole bbolt file's buckets,
// keys and values, leaving out the raft position in meta, as etcd's
// Maintenance.Hash does.
func (s *Store) Hash() (uint32, error) { return s.b.Hash(HashIgnores) }

// hashBuckets returns the CRC-32 (Castagnoli) of every bucket name, key and
// value of tx in key order, leaving out the keys in ignore (bucket name →
// keys).
func hashBuckets(tx *bolt.Tx, ignore map[string][]string) (uint32, error) {
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
