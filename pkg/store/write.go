package store

import (
	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/kvcodec"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// WriteTxn is one mutating request: all its changes share one main
// revision (sub-revisions 0, 1, 2...), become visible together at End and
// reach watchers as one batch. Ranges inside it see its own changes.
type WriteTxn struct {
	s        *Store
	wt       *backend.WriteTx
	beginRev int64
	changes  []*mvccpb.Event
	err      error // the first backend failure; the txn is void
	// leaseCheck vets the lease of each put request (see CheckLeases).
	leaseCheck func(id int64) error
	counts     opCounts
}

// Write begins a write transaction; it must be ended with End.
func (s *Store) Write() *WriteTxn {
	s.writeMu.Lock()
	return &WriteTxn{s: s, wt: s.b.Write(), beginRev: s.currentRev.Load()}
}

// Rev returns the revision of the store as this transaction sees it: the
// revision it will commit if it has changed anything, else the current one.
func (w *WriteTxn) Rev() int64 {
	if len(w.changes) > 0 {
		return w.beginRev + 1
	}
	return w.beginRev
}

// Range reads inside the transaction, seeing its own changes.
func (w *WriteTxn) Range(key, end []byte, opts RangeOptions) (*RangeResult, error) {
	w.s.mu.RLock()
	compactRev := w.s.compactRev
	w.s.mu.RUnlock()
	// One view for all of the range's reads (the batch's writes are in it),
	// not a bbolt transaction per key.
	rt := w.s.b.Read()
	defer rt.Close()
	return w.s.rangeKVs(key, end, opts, w.Rev(), compactRev, rt)
}

func (w *WriteTxn) nextRevision() Revision {
	return Revision{Main: w.beginRev + 1, Sub: int64(len(w.changes))}
}

// Put sets key to value, attached to lease (0: none), and returns the new
// key-value.
func (w *WriteTxn) Put(key, value []byte, lease int64) (*mvccpb.KeyValue, error) {
	if len(key) == 0 {
		return nil, ErrEmptyKey
	}
	if w.err != nil {
		return nil, w.err
	}
	rev := w.nextRevision()
	kv := &mvccpb.KeyValue{Key: key, Value: value, CreateRevision: rev.Main, ModRevision: rev.Main, Version: 1, Lease: lease}
	if cur, ok := w.s.index.Get(key, rev.Main); ok {
		kv.CreateRevision = cur.Created.Main
		kv.Version = cur.Version + 1
	} else {
		w.counts.keys++
	}
	if err := w.wt.Put(BucketKey, RevisionKey(rev, false), kvcodec.Marshal(kv)); err != nil {
		w.err = err
		return nil, err
	}
	w.s.index.Put(key, rev)
	w.s.leases.attach(string(key), lease)
	w.changes = append(w.changes, &mvccpb.Event{Type: mvccpb.PUT, Kv: kv})
	w.counts.puts++
	w.counts.putBytes += int64(len(key) + len(value))
	return kv, nil
}

// DeleteRange deletes the keys in [key, end) that exist and returns their
// last key-values.
func (w *WriteTxn) DeleteRange(key, end []byte) ([]*mvccpb.KeyValue, error) {
	if len(key) == 0 {
		return nil, ErrEmptyKey
	}
	if w.err != nil {
		return nil, w.err
	}
	w.counts.deletes++
	res, err := w.Range(key, end, RangeOptions{})
	if err != nil {
		return nil, err
	}
	for _, prev := range res.KVs {
		if err := w.deleteKey(prev.Key); err != nil {
			return nil, err
		}
	}
	return res.KVs, nil
}

// DeleteKeys deletes the keys in [key, end) that exist and returns how
// many: DeleteRange without reading the values.
func (w *WriteTxn) DeleteKeys(key, end []byte) (int64, error) {
	if len(key) == 0 {
		return 0, ErrEmptyKey
	}
	if w.err != nil {
		return 0, w.err
	}
	w.counts.deletes++
	kas, _ := w.s.index.RangeAt(key, end, w.Rev(), 0)
	for _, ka := range kas {
		if err := w.deleteKey(ka.Key); err != nil {
			return 0, err
		}
	}
	return int64(len(kas)), nil
}

// deleteKey writes the tombstone of an existing key.
func (w *WriteTxn) deleteKey(key []byte) error {
	rev := w.nextRevision()
	if err := w.wt.Put(BucketKey, RevisionKey(rev, true), kvcodec.Marshal(&mvccpb.KeyValue{Key: key})); err != nil {
		w.err = err
		return err
	}
	w.s.index.Tombstone(key, rev)
	w.counts.keys--
	w.s.leases.detach(string(key))
	w.changes = append(w.changes, &mvccpb.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: key, ModRevision: rev.Main}})
	return nil
}

// DeleteLease deletes every key attached to lease, in this one revision,
// in key order, and returns how many.
func (w *WriteTxn) DeleteLease(lease int64) (int64, error) {
	var deleted int64
	for _, key := range w.s.leases.keysOf(lease) {
		n, err := w.DeleteKeys([]byte(key), nil)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// SetConsistentIndex records the raft index and term of the entry this
// transaction applies, in the same backend batch as its changes.
func (w *WriteTxn) SetConsistentIndex(index, term uint64) error {
	if w.err != nil {
		return w.err
	}
	if err := w.wt.Put(BucketMeta, MetaConsistentIndex, encodeUint64(index)); err != nil {
		w.err = err
		return err
	}
	if err := w.wt.Put(BucketMeta, MetaTerm, encodeUint64(term)); err != nil {
		w.err = err
		return err
	}
	w.s.consistentIndex.Store(index)
	w.s.term.Store(term)
	return nil
}

// Backend gives the transaction's backend writer, for buckets that other
// packages own; their writes land in the same batch.
func (w *WriteTxn) Backend() *backend.WriteTx { return w.wt }

// End publishes the transaction's changes, hands them to watchers and lets
// the next writer in. It returns a backend failure, if any occurred.
func (w *WriteTxn) End() error {
	defer w.s.writeMu.Unlock()
	w.counts.addTo(w.s.stats, &w.s.keys)
	if len(w.changes) > 0 && w.err == nil {
		rev := w.beginRev + 1
		w.s.currentRev.Store(rev)
		w.s.watch.notify(rev, w.changes)
	}
	if err := w.wt.Unlock(); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}
