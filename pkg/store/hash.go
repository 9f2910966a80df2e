package store

import (
	"hash/crc32"
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
// that are still their key's latest at rev. This is what etcd 3.7 computes
// (found by comparing with its etcdutl hashkv at every revision), so members
// of either kind that applied the same history agree.
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
	keep := s.index.keep(compactRev, rev)
	lower := Revision{Main: compactRev + 1}
	h := crc32.New(castagnoli)
	h.Write(BucketKey)
	var rangeErr error
	err := r.rt.Range(BucketKey, nil, RevisionKey(Revision{Main: rev + 1}, false), func(k, v []byte) bool {
		kr, _, err := ParseRevisionKey(k)
		if err != nil {
			rangeErr = err
			return false
		}
		if lower.GreaterThan(kr) && len(keep) > 0 {
			if _, kept := keep[kr]; !kept {
				return true
			}
		}
		h.Write(k)
		h.Write(v)
		return true
	})
	if err == nil {
		err = rangeErr
	}
	if err != nil {
		return KVHash{}, err
	}
	return KVHash{Hash: h.Sum32(), HashRevision: rev, CompactRevision: compactRev}, nil
}

// Hash returns the CRC-32 (Castagnoli) of the whole bbolt file's buckets,
// keys and values, leaving out the raft position in meta, as etcd's
// Maintenance.Hash does.
func (s *Store) Hash() (uint32, error) { return s.b.Hash(HashIgnores) }
