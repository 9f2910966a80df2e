package store

import (
	"hash"
	"hash/crc32"
	"slices"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/pkg/keyindex"
	"github.com/cairnkv/cairn/pkg/kvcodec"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// KVHash is the result of HashKV. CompactRevision is -1 when nothing had
// been compacted, as etcd answers.
type KVHash struct {
	Hash            uint32
	HashRevision    int64
	CompactRevision int64
}

// noCompaction is the compact revision HashKV reports when there was none.
const noCompaction = -1

// maxCompactionHashes is how many hashes of past compactions a store keeps
// (etcd keeps 10).
const maxCompactionHashes = 10

// HashKV returns the CRC-32 (Castagnoli) of the key bucket's name and of the
// revisions up to rev (0: the current one): every revision after the last
// compaction, and of those at or before it only the ones compaction keeps
// that are still their key's latest at rev (all of them if compaction
// keeps none at all), but never a tombstone at the compaction revision
// itself. This is what etcd 3.7 computes (found by comparing with its
// etcdutl hashkv at every revision), so members of either kind that
// applied the same history agree.
//
// For the revision of a compaction this store ran, HashKV answers instead
// with the hash of that revision as it was just before the compaction
// (with the compact revision before it), even once later compactions are
// past it: that is what etcd's server answers, and so a member's hash at
// a compaction revision does not change when the compaction runs. The
// last maxCompactionHashes of them are kept, in memory only, as etcd does.
func (s *Store) HashKV(rev int64) (KVHash, error) {
	if h, ok := s.compactionHash(rev); ok {
		return h, nil
	}
	r := s.Read()
	defer r.End()
	compactRev := r.compactRev
	rev, err := readRev(rev, r.rev, compactRev)
	if err != nil {
		return KVHash{}, err
	}
	sum, err := hashKV(s.index, compactRev, rev, func(upper []byte, fn func(k, v []byte) bool) error {
		return r.rt.Range(BucketKey, nil, upper, fn)
	})
	if err != nil {
		return KVHash{}, err
	}
	return KVHash{Hash: sum, HashRevision: rev, CompactRevision: reportedCompactRev(compactRev)}, nil
}

func reportedCompactRev(compactRev int64) int64 {
	if compactRev == 0 {
		return noCompaction
	}
	return compactRev
}

// compactionHashes are the hashes of the revisions of the store's last
// compactions, oldest first.
type compactionHashes struct {
	mu     sync.Mutex
	hashes []KVHash
}

func (c *compactionHashes) add(h KVHash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hashes = append(c.hashes, h)
	if len(c.hashes) > maxCompactionHashes {
		c.hashes = slices.Delete(c.hashes, 0, len(c.hashes)-maxCompactionHashes)
	}
}

// compactionHash returns the kept hash of revision rev, if rev is that of a
// compaction whose hash is kept. Revision 0 (the current one) never is, as
// in etcd.
func (s *Store) compactionHash(rev int64) (KVHash, bool) {
	c := &s.compactionHashes
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.hashes {
		if h.HashRevision == rev {
			return h, true
		}
	}
	return KVHash{}, false
}

// hashKV hashes the key bucket up to rev as HashKV describes; scan calls fn
// on the bucket's entries below upper in key order.
func hashKV(index *keyindex.Index, compactRev, rev int64, scan func(upper []byte, fn func(k, v []byte) bool) error) (uint32, error) {
	kh := newKVHasher(index.RetainsAny(compactRev, indexCompactionBatch), compactRev, rev)
	var kv mvccpb.KeyValue
	var writeErr error
	err := scan(RevisionKey(Revision{Main: rev + 1}, false), func(k, v []byte) bool {
		writeErr = kh.write(k, v, func(kr Revision) (bool, error) { return liveAt(index, kr, v, rev, &kv) })
		return writeErr == nil
	})
	if err == nil {
		err = writeErr
	}
	return kh.sum(), err
}

// liveAt reports whether the key-bucket entry of revision kr with value v
// holds its key's value at rev, as the index says; kv is scratch space.
func liveAt(index *keyindex.Index, kr Revision, v []byte, rev int64, kv *mvccpb.KeyValue) (bool, error) {
	if err := kvcodec.Decode(v, kv); err != nil {
		return false, err
	}
	ka, ok := index.Get(kv.Key, rev)
	return ok && ka.Mod == kr, nil
}

// kvHasher hashes the entries of the key bucket, given in key order, as
// HashKV at rev with the compaction at compactRev describes.
type kvHasher struct {
	h          hash.Hash32
	compactRev int64
	rev        int64
	// retained tells that the compaction at compactRev retained a
	// revision of some key: then an entry at or before compactRev counts
	// only if it is still its key's at rev (etcd leaves them all in when
	// the compaction retained nothing).
	retained bool
}

// newKVHasher hashes as HashKV at rev with the compaction at compactRev,
// given whether that compaction retained anything (Index.RetainsAny).
func newKVHasher(retained bool, compactRev, rev int64) *kvHasher {
	kh := &kvHasher{h: crc32.New(castagnoli), compactRev: compactRev, rev: rev, retained: retained}
	kh.h.Write(BucketKey)
	return kh
}

// write hashes one entry of the key bucket, if HashKV covers it; live
// tells, when asked, whether the entry of revision kr holds its key's value
// at the hashed revision.
func (kh *kvHasher) write(k, v []byte, live func(kr Revision) (bool, error)) error {
	kr, tomb, err := ParseRevisionKey(k)
	if err != nil {
		return err
	}
	if kr.Main > kh.rev {
		return nil
	}
	if kr.Main <= kh.compactRev && kh.retained {
		if ok, err := live(kr); err != nil || !ok {
			return err
		}
	}
	// A compaction at a delete keeps its tombstone (see compactor.compact),
	// where older etcd releases and cairn removed it; etcd leaves it out of
	// the hash so that the hash does not depend on which did.
	if tomb && kr.Main == kh.compactRev {
		return nil
	}
	kh.h.Write(k)
	kh.h.Write(v)
	return nil
}

func (kh *kvHasher) sum() uint32 { return kh.h.Sum32() }

// Hash returns the CRC-32 (Castagnoli) of the whole bbolt file's buckets,
// keys and values, leaving out the raft position in meta, as etcd's
// Maintenance.Hash does.
func (s *Store) Hash() (uint32, error) { return s.b.Hash(HashIgnores) }
