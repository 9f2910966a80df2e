package store

import (
	"bytes"
	"sort"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// This file runs the KV requests of the etcd v3 API against the store. Only
// the revision is set in response headers; the server fills in the rest.

func header(rev int64) *pb.ResponseHeader { return &pb.ResponseHeader{Revision: rev} }

// ranger is a transaction that can read: ReadTxn or WriteTxn.
type ranger interface {
	Range(key, end []byte, opts RangeOptions) (*RangeResult, error)
}

// ExecRange runs a range request in a read transaction.
func (r *ReadTxn) ExecRange(req *pb.RangeRequest) (*pb.RangeResponse, error) {
	r.ranges++
	return execRange(r, req)
}

// ExecRange runs a range request inside a write transaction.
func (w *WriteTxn) ExecRange(req *pb.RangeRequest) (*pb.RangeResponse, error) {
	w.counts.ranges++
	return execRange(w, req)
}

// Range runs a range request in a read transaction of its own.
func (s *Store) Range(req *pb.RangeRequest) (*pb.RangeResponse, error) {
	r := s.Read()
	defer r.End()
	return r.ExecRange(req)
}

func execRange(r ranger, req *pb.RangeRequest) (*pb.RangeResponse, error) {
	if len(req.Key) == 0 {
		return nil, ErrEmptyKey
	}
	// Sorting and filtering need every key; otherwise fetch one more than
	// the limit to learn whether there are more.
	limit := req.Limit
	if req.SortOrder != pb.RangeRequest_NONE || req.MinModRevision != 0 || req.MaxModRevision != 0 ||
		req.MinCreateRevision != 0 || req.MaxCreateRevision != 0 {
		limit = 0
	} else if limit > 0 {
		limit++
	}
	// Sorting by value needs the values, even of a keys-only range (and etcd
	// then answers with the leases too).
	keysOnly := req.KeysOnly && req.SortTarget != pb.RangeRequest_VALUE
	res, err := r.Range(req.Key, req.RangeEnd, RangeOptions{Limit: limit, Rev: req.Revision, Count: req.CountOnly, KeysOnly: keysOnly})
	if err != nil {
		return nil, err
	}
	kvs := filterKVs(res.KVs, req)
	sortKVs(kvs, req.SortTarget, req.SortOrder)
	resp := &pb.RangeResponse{Header: header(res.Rev), Count: int64(res.Count)}
	if req.Limit > 0 && int64(len(kvs)) > req.Limit {
		kvs = kvs[:req.Limit]
		resp.More = true
	}
	if req.KeysOnly {
		for _, kv := range kvs {
			kv.Value = nil
		}
	}
	resp.Kvs = kvs
	return resp, nil
}

func filterKVs(kvs []*mvccpb.KeyValue, req *pb.RangeRequest) []*mvccpb.KeyValue {
	keep := func(kv *mvccpb.KeyValue) bool {
		return (req.MinModRevision == 0 || kv.ModRevision >= req.MinModRevision) &&
			(req.MaxModRevision == 0 || kv.ModRevision <= req.MaxModRevision) &&
			(req.MinCreateRevision == 0 || kv.CreateRevision >= req.MinCreateRevision) &&
			(req.MaxCreateRevision == 0 || kv.CreateRevision <= req.MaxCreateRevision)
	}
	out := kvs[:0]
	for _, kv := range kvs {
		if keep(kv) {
			out = append(out, kv)
		}
	}
	return out
}

// sortKVs orders kvs as etcd does: results come in key order, so sorting by
// key ascending is a no-op, and another target without an order sorts
// ascending. sort.Sort keeps the order of ties the same as etcd's.
func sortKVs(kvs []*mvccpb.KeyValue, target pb.RangeRequest_SortTarget, order pb.RangeRequest_SortOrder) {
	if target != pb.RangeRequest_KEY && order == pb.RangeRequest_NONE {
		order = pb.RangeRequest_ASCEND
	} else if target == pb.RangeRequest_KEY && order == pb.RangeRequest_ASCEND {
		order = pb.RangeRequest_NONE
	}
	if order == pb.RangeRequest_NONE {
		return
	}
	var s sort.Interface = kvSorter{kvs: kvs, less: kvLess(target)}
	if order == pb.RangeRequest_DESCEND {
		s = sort.Reverse(s)
	}
	sort.Sort(s)
}

func kvLess(target pb.RangeRequest_SortTarget) func(a, b *mvccpb.KeyValue) bool {
	switch target {
	case pb.RangeRequest_VERSION:
		return func(a, b *mvccpb.KeyValue) bool { return a.Version < b.Version }
	case pb.RangeRequest_CREATE:
		return func(a, b *mvccpb.KeyValue) bool { return a.CreateRevision < b.CreateRevision }
	case pb.RangeRequest_MOD:
		return func(a, b *mvccpb.KeyValue) bool { return a.ModRevision < b.ModRevision }
	case pb.RangeRequest_VALUE:
		return func(a, b *mvccpb.KeyValue) bool { return bytes.Compare(a.Value, b.Value) < 0 }
	default:
		return func(a, b *mvccpb.KeyValue) bool { return bytes.Compare(a.Key, b.Key) < 0 }
	}
}

type kvSorter struct {
	kvs  []*mvccpb.KeyValue
	less func(a, b *mvccpb.KeyValue) bool
}

func (s kvSorter) Len() int           { return len(s.kvs) }
func (s kvSorter) Swap(i, j int)      { s.kvs[i], s.kvs[j] = s.kvs[j], s.kvs[i] }
func (s kvSorter) Less(i, j int) bool { return s.less(s.kvs[i], s.kvs[j]) }

// ValidatePut checks a put request before it is proposed or applied.
func ValidatePut(req *pb.PutRequest) error {
	switch {
	case len(req.Key) == 0:
		return ErrEmptyKey
	case req.IgnoreValue && len(req.Value) != 0:
		return ErrValueProvided
	case req.IgnoreLease && req.Lease != 0:
		return ErrLeaseProvided
	}
	return nil
}

// ExecPut runs a put request.
func (w *WriteTxn) ExecPut(req *pb.PutRequest) (*pb.PutResponse, error) {
	if err := ValidatePut(req); err != nil {
		return nil, err
	}
	// The lease before the key, as etcd 3.7.3 answers a put with both
	// wrong (see checkPlan).
	if err := w.checkLease(req.Lease); err != nil {
		return nil, err
	}
	prev, err := w.prevKV(req.Key, req.PrevKv || req.IgnoreValue || req.IgnoreLease)
	if err != nil {
		return nil, err
	}
	if (req.IgnoreValue || req.IgnoreLease) && prev == nil {
		return nil, ErrKeyNotFound
	}
	value, lease := req.Value, req.Lease
	if req.IgnoreValue {
		value = prev.Value
	}
	if req.IgnoreLease {
		lease = prev.Lease
	}
	if _, err := w.Put(req.Key, value, lease); err != nil {
		return nil, err
	}
	resp := &pb.PutResponse{Header: header(w.Rev())}
	if req.PrevKv {
		resp.PrevKv = prev
	}
	return resp, nil
}

// prevKV returns the current key-value of key if wanted and present.
func (w *WriteTxn) prevKV(key []byte, wanted bool) (*mvccpb.KeyValue, error) {
	if !wanted {
		return nil, nil
	}
	res, err := w.Range(key, nil, RangeOptions{})
	if err != nil || len(res.KVs) == 0 {
		return nil, err
	}
	return res.KVs[0], nil
}

// ExecDeleteRange runs a delete-range request.
func (w *WriteTxn) ExecDeleteRange(req *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	if !req.PrevKv {
		n, err := w.DeleteKeys(req.Key, req.RangeEnd)
		if err != nil {
			return nil, err
		}
		return &pb.DeleteRangeResponse{Header: header(w.Rev()), Deleted: n}, nil
	}
	deleted, err := w.DeleteRange(req.Key, req.RangeEnd)
	if err != nil {
		return nil, err
	}
	return &pb.DeleteRangeResponse{Header: header(w.Rev()), Deleted: int64(len(deleted)), PrevKvs: deleted}, nil
}

// ExecCompaction runs a compaction request; the channel closes when the
// compacted revisions have left the backend.
func (w *WriteTxn) ExecCompaction(req *pb.CompactionRequest) (*pb.CompactionResponse, <-chan struct{}, error) {
	done, err := w.Compact(req.Revision)
	if err != nil {
		return nil, nil, err
	}
	return &pb.CompactionResponse{Header: header(w.Rev())}, done, nil
}

// Put runs a put request in a write transaction of its own.
func (s *Store) Put(req *pb.PutRequest) (*pb.PutResponse, error) {
	w := s.Write()
	resp, err := w.ExecPut(req)
	return resp, endWith(w, err)
}

// DeleteRange runs a delete-range request in a write transaction of its own.
func (s *Store) DeleteRange(req *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	w := s.Write()
	resp, err := w.ExecDeleteRange(req)
	return resp, endWith(w, err)
}

// Txn runs a txn request in a write transaction of its own.
func (s *Store) Txn(req *pb.TxnRequest) (*pb.TxnResponse, error) {
	w := s.Write()
	resp, err := w.ExecTxn(req)
	return resp, endWith(w, err)
}

// Compact runs a compaction in a write transaction of its own.
func (s *Store) Compact(rev int64) (<-chan struct{}, error) {
	w := s.Write()
	done, err := w.Compact(rev)
	return done, endWith(w, err)
}

// endWith ends w and returns err, or the error of ending if err is nil.
func endWith(w *WriteTxn, err error) error {
	if endErr := w.End(); err == nil {
		err = endErr
	}
	return err
}
