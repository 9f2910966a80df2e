package store

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/kvcodec"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// RangeOptions select what a range returns.
type RangeOptions struct {
	Limit int64 // at most this many keys; 0 for all
	Rev   int64 // read at this revision; 0 for the current one
	Count bool  // count only, return no key-values
	// KeysOnly leaves the values out: the key-values come from the key
	// index alone, without their leases, as etcd 3.7 answers a keys-only
	// range; nothing is read from the backend.
	KeysOnly bool
}

// RangeResult is what a range found.
type RangeResult struct {
	KVs   []*mvccpb.KeyValue
	Count int   // keys in the range at Rev, regardless of Limit
	Rev   int64 // the store's current revision
}

// ReadTxn is a consistent read view of the store: every range in it sees
// the store as of the moment it began. It must be ended with End.
type ReadTxn struct {
	s          *Store
	rev        int64
	compactRev int64
	rt         *backend.ReadTx
	ranges     int64 // range requests run in it
}

// Read begins a read transaction.
func (s *Store) Read() *ReadTxn {
	s.mu.RLock()
	// Every revision up to rev reached the backend before rev was
	// published, so a backend view opened afterwards contains it.
	rev := s.currentRev.Load()
	return &ReadTxn{s: s, rev: rev, compactRev: s.compactRev, rt: s.b.Read()}
}

// Rev returns the revision the transaction reads at.
func (r *ReadTxn) Rev() int64 { return r.rev }

// Range returns the key-values in [key, end) (see RangeOptions); an empty
// end means the single key, end "\x00" every key from key on.
func (r *ReadTxn) Range(key, end []byte, opts RangeOptions) (*RangeResult, error) {
	return r.s.rangeKVs(key, end, opts, r.rev, r.compactRev, r.rt)
}

// End ends the transaction.
func (r *ReadTxn) End() {
	if r.ranges > 0 {
		(&opCounts{ranges: r.ranges}).addTo(r.s.stats, &r.s.keys)
	}
	r.rt.Close()
	r.s.mu.RUnlock()
}

// rangeKVs implements Range for read and write transactions: curRev is the
// newest revision visible to the caller and rt the view of the backend.
func (s *Store) rangeKVs(key, end []byte, opts RangeOptions, curRev, compactRev int64, rt *backend.ReadTx) (*RangeResult, error) {
	rev, err := readRev(opts.Rev, curRev, compactRev)
	if err != nil {
		return &RangeResult{Rev: curRev}, err
	}
	if opts.Count {
		return &RangeResult{Count: s.index.CountAt(key, end, rev), Rev: curRev}, nil
	}
	kas, total := s.index.RangeAt(key, end, rev, int(opts.Limit))
	res := &RangeResult{KVs: make([]*mvccpb.KeyValue, len(kas)), Count: total, Rev: curRev}
	// The key-values are filled in with their bytes where they are (the
	// index, the view), then those bytes are copied into one block: a few
	// allocations for the whole range, not three per key.
	kvs := make([]mvccpb.KeyValue, len(kas))
	var vals [][]byte
	if !opts.KeysOnly {
		if vals, err = storedValues(len(kas), func(i int) Revision { return kas[i].Mod }, rt); err != nil {
			return nil, fmt.Errorf("range %q at %d: %w", key, rev, err)
		}
	}
	size := 0
	for i := range kas {
		ka, kv := &kas[i], &kvs[i]
		if opts.KeysOnly {
			// What etcd answers: the index's fields, no lease.
			kv.Key, kv.CreateRevision, kv.ModRevision, kv.Version = ka.Key, ka.Created.Main, ka.Mod.Main, ka.Version
		} else if err := kvcodec.Decode(vals[i], kv); err != nil {
			return nil, fmt.Errorf("range %q at %d: revision %s: %w", key, rev, ka.Mod, err)
		}
		size += len(kv.Key) + len(kv.Value)
		res.KVs[i] = kv
	}
	block := make([]byte, 0, size)
	own := func(b []byte) []byte {
		if len(b) == 0 {
			return nil
		}
		n := len(block)
		block = append(block, b...)
		return block[n:len(block):len(block)]
	}
	for i := range kvs {
		kvs[i].Key, kvs[i].Value = own(kvs[i].Key), own(kvs[i].Value)
	}
	return res, nil
}

// storedValues returns the stored value of each of n revisions, rev(i)
// the i-th, as vals[i], valid while rt is open. It looks them up in the
// order the file holds them: the revisions of neighbouring keys can lie
// anywhere in the file (keys written over time), and looked up in key
// order each would be a search from the root ending on a page no search
// touched before; in the file's order the searches go front to back, over
// branch pages the search before left in the CPU's cache, and revisions
// written together are the cursor's next. From parallelLookups values on,
// two goroutines look up a half each (two cursors of the one read-only
// bbolt transaction, which reads only the mapped file): the time goes to
// waiting on memory, and the second core waits beside the first.
func storedValues(n int, rev func(i int) Revision, rt *backend.ReadTx) ([][]byte, error) {
	type revAt struct {
		rev Revision
		i   int
	}
	order := make([]revAt, n)
	inOrder := true
	for i := range order {
		order[i] = revAt{rev(i), i}
		inOrder = inOrder && (i == 0 || order[i-1].rev.Compare(order[i].rev) < 0)
	}
	if !inOrder {
		slices.SortFunc(order, func(a, b revAt) int { return a.rev.Compare(b.rev) })
	}
	vals := make([][]byte, n)
	lookUp := func(order []revAt) error {
		br := rt.BucketReader(BucketKey)
		revKey := make([]byte, 0, RevisionKeyLen)
		for _, o := range order {
			revKey = AppendRevisionKey(revKey[:0], o.rev, false)
			v, ok := br.Get(revKey)
			if !ok {
				return fmt.Errorf("revision %s missing from the backend", o.rev)
			}
			vals[o.i] = v
		}
		return nil
	}
	if n < parallelLookups {
		return vals, lookUp(order)
	}
	var second error
	var wg sync.WaitGroup
	wg.Go(func() { second = lookUp(order[n/2:]) })
	first := lookUp(order[:n/2])
	wg.Wait()
	return vals, cmp.Or(first, second)
}

// parallelLookups is the number of values from which storedValues looks
// them up on two goroutines, a half each.
const parallelLookups = 2048
