package store

import (
	"bytes"
	"slices"

	"github.com/cairnkv/cairn/pkg/keyindex"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// ValidateTxn checks a txn request before it is proposed and again when it
// is applied, as etcd does: first its shape (the number of operations, as
// --max-txn-ops bounds it; 0: no bound; empty keys, invalid puts, empty
// operations), then that no key is written twice by one run of it. Both
// walks visit each operation once per level of nesting above it.
func ValidateTxn(req *pb.TxnRequest, maxOps int) error {
	if err := checkTxnShape(req, maxOps, maxOps > 0); err != nil {
		return err
	}
	_, err := txnWrites(req)
	return err
}

// checkTxnShape checks a txn and the txns nested in it, in etcd's order:
// the txn's number of operations, then its compares, then its operations
// in order, a nested txn in its place. As in etcd, a txn counts the largest
// of its compares, success and failure operations, and that number comes
// off the budget of the txns nested in it: along any path from the outer
// txn, the counts add up to at most maxOps.
func checkTxnShape(t *pb.TxnRequest, budget int, limited bool) error {
	n := max(len(t.Compare), len(t.Success), len(t.Failure))
	if limited && n > budget {
		return ErrTooManyOps
	}
	for _, c := range t.Compare {
		if len(c.Key) == 0 {
			return ErrEmptyKey
		}
	}
	for _, ops := range [][]*pb.RequestOp{t.Success, t.Failure} {
		for _, op := range ops {
			var err error
			switch r := op.Request.(type) {
			case *pb.RequestOp_RequestRange:
				err = ValidateRange(r.RequestRange)
			case *pb.RequestOp_RequestPut:
				err = ValidatePut(r.RequestPut)
			case *pb.RequestOp_RequestDeleteRange:
				if len(r.RequestDeleteRange.GetKey()) == 0 {
					err = ErrEmptyKey
				}
			case *pb.RequestOp_RequestTxn:
				err = checkTxnShape(r.RequestTxn, budget-n, limited)
			default:
				// A RequestOp with no request in it: etcd refuses the txn
				// with this error (at the API, before proposing).
				err = ErrKeyNotFound
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// ValidateRange checks what etcd checks of a range before it reads, alone
// or in a txn: a key, then sort options within their enums.
func ValidateRange(r *pb.RangeRequest) error {
	if len(r.GetKey()) == 0 {
		return ErrEmptyKey
	}
	if _, ok := pb.RangeRequest_SortOrder_name[int32(r.SortOrder)]; !ok {
		return ErrInvalidSortOption
	}
	if _, ok := pb.RangeRequest_SortTarget_name[int32(r.SortTarget)]; !ok {
		return ErrInvalidSortOption
	}
	return nil
}

type keyRange struct{ key, end []byte }

// writeSet is what a txn or a branch may write in one run. Each write is
// tagged with the operation of the branch it comes from: writes of one
// operation (the two branches of a nested txn) never run together.
type writeSet struct {
	puts []taggedKey
	dels []taggedRange
}

type taggedKey struct {
	key []byte
	op  int
}

type taggedRange struct {
	keyRange
	op int
}

// txnWrites returns what a txn may write; its two branches are checked
// apart, as only one of them runs.
func txnWrites(t *pb.TxnRequest) (writeSet, error) {
	s, err := branchWrites(t.Success)
	if err != nil {
		return writeSet{}, err
	}
	f, err := branchWrites(t.Failure)
	if err != nil {
		return writeSet{}, err
	}
	return writeSet{puts: concat(s.puts, f.puts), dels: concat(s.dels, f.dels)}, nil
}

// concat is append that does not copy to an empty slice.
func concat[T any](a, b []T) []T {
	if len(a) == 0 {
		return b
	}
	return append(a, b...)
}

// branchWrites collects the writes of a branch, nested txns included, and
// refuses a key that two of its operations put, or put and delete.
func branchWrites(ops []*pb.RequestOp) (writeSet, error) {
	var ws writeSet
	for i, op := range ops {
		switch r := op.Request.(type) {
		case *pb.RequestOp_RequestPut:
			ws.puts = append(ws.puts, taggedKey{r.RequestPut.Key, i})
		case *pb.RequestOp_RequestDeleteRange:
			d := r.RequestDeleteRange
			ws.dels = append(ws.dels, taggedRange{keyRange{d.Key, d.RangeEnd}, i})
		case *pb.RequestOp_RequestTxn:
			inner, err := txnWrites(r.RequestTxn)
			if err != nil {
				return writeSet{}, err
			}
			// The inner writes are this branch's now, tagged in place.
			for k := range inner.puts {
				inner.puts[k].op = i
			}
			for k := range inner.dels {
				inner.dels[k].op = i
			}
			ws.puts, ws.dels = concat(ws.puts, inner.puts), concat(ws.dels, inner.dels)
		}
	}
	if ws.collide() {
		return writeSet{}, ErrDuplicateKey
	}
	return ws, nil
}

// collide reports whether two operations of a branch write the same key:
// with the puts sorted, each key and each deleted range is one binary
// search.
func (ws writeSet) collide() bool {
	if len(ws.puts) == 0 || len(ws.puts)+len(ws.dels) == 1 {
		return false
	}
	puts := ws.puts
	slices.SortStableFunc(puts, func(a, b taggedKey) int { return bytes.Compare(a.key, b.key) })
	// other[j] is the first put after j from another operation than j's.
	other := make([]int, len(puts))
	other[len(puts)-1] = len(puts)
	for j := len(puts) - 2; j >= 0; j-- {
		if puts[j+1].op != puts[j].op {
			other[j] = j + 1
		} else {
			other[j] = other[j+1]
		}
	}
	// puts[lo:hi] are the puts of keys in a range; true if one of them is
	// not from operation op.
	othersIn := func(lo, hi, op int) bool {
		return lo < hi && (puts[lo].op != op || other[lo] < hi)
	}
	search := func(key []byte, after bool) int {
		i, found := slices.BinarySearchFunc(puts, key, func(p taggedKey, k []byte) int { return bytes.Compare(p.key, k) })
		for after && found && i < len(puts) && bytes.Equal(puts[i].key, key) {
			i++
		}
		return i
	}
	for j := 0; j+1 < len(puts); j++ {
		if bytes.Equal(puts[j].key, puts[j+1].key) && puts[j].op != puts[j+1].op {
			return true
		}
	}
	for _, d := range ws.dels {
		lo := search(d.key, false)
		var hi int
		switch {
		case len(d.end) == 0:
			hi = search(d.key, true)
		case keyindex.IsInfiniteEnd(d.end):
			hi = len(puts)
		default:
			hi = search(d.end, false) // an end at or before the key: empty
		}
		if othersIn(lo, hi, d.op) {
			return true
		}
	}
	return false
}

// txnPlan is the branch each txn of a request takes, decided before any of
// it runs: compares see the store as it was when the txn began.
type txnPlan struct {
	succeeded bool
	nested    []*txnPlan // one per nested txn of the chosen branch, in order
}

func (p *txnPlan) ops(req *pb.TxnRequest) []*pb.RequestOp {
	if p.succeeded {
		return req.Success
	}
	return req.Failure
}

// ExecTxn runs a txn request: every compare is evaluated first, then the
// chosen operations run in order, all in one revision.
func (w *WriteTxn) ExecTxn(req *pb.TxnRequest) (*pb.TxnResponse, error) {
	if err := ValidateTxn(req, 0); err != nil {
		return nil, err
	}
	plan, err := w.planTxn(req)
	if err != nil {
		return nil, err
	}
	if err := w.checkPlan(req, plan); err != nil {
		return nil, err
	}
	return w.runTxn(req, plan)
}

func (w *WriteTxn) planTxn(req *pb.TxnRequest) (*txnPlan, error) {
	plan := &txnPlan{succeeded: true}
	for _, c := range req.Compare {
		ok, err := w.compare(c)
		if err != nil {
			return nil, err
		}
		if !ok {
			plan.succeeded = false
			break
		}
	}
	for _, op := range plan.ops(req) {
		if nested, ok := op.Request.(*pb.RequestOp_RequestTxn); ok {
			np, err := w.planTxn(nested.RequestTxn)
			if err != nil {
				return nil, err
			}
			plan.nested = append(plan.nested, np)
		}
	}
	return plan, nil
}

// checkPlan finds, before anything is written, the errors the chosen
// operations would meet, operation after operation: reads of compacted or
// future revisions, puts to a lease the lease check refuses (see
// CheckLeases) and puts that keep the value or lease of a key that does
// not exist; a put wrong in both ways is refused for its lease, as etcd
// 3.7.3 does.
func (w *WriteTxn) checkPlan(req *pb.TxnRequest, plan *txnPlan) error {
	nested := 0
	for _, op := range plan.ops(req) {
		switch r := op.Request.(type) {
		case *pb.RequestOp_RequestRange:
			if rev := r.RequestRange.Revision; rev != 0 {
				if _, err := w.Range(r.RequestRange.Key, r.RequestRange.RangeEnd, RangeOptions{Rev: rev, Count: true}); err != nil {
					return err
				}
			}
		case *pb.RequestOp_RequestPut:
			put := r.RequestPut
			if err := w.checkLease(put.Lease); err != nil {
				return err
			}
			if put.IgnoreValue || put.IgnoreLease {
				if prev, err := w.prevKV(put.Key, true); err != nil || prev == nil {
					if err == nil {
						err = ErrKeyNotFound
					}
					return err
				}
			}
		case *pb.RequestOp_RequestTxn:
			if err := w.checkPlan(r.RequestTxn, plan.nested[nested]); err != nil {
				return err
			}
			nested++
		}
	}
	return nil
}

func (w *WriteTxn) runTxn(req *pb.TxnRequest, plan *txnPlan) (*pb.TxnResponse, error) {
	ops := plan.ops(req)
	resp := &pb.TxnResponse{Succeeded: plan.succeeded, Responses: make([]*pb.ResponseOp, 0, len(ops))}
	nested := 0
	for _, op := range ops {
		var out *pb.ResponseOp
		switch r := op.Request.(type) {
		case *pb.RequestOp_RequestRange:
			rr, err := w.ExecRange(r.RequestRange)
			if err != nil {
				return nil, err
			}
			out = &pb.ResponseOp{Response: &pb.ResponseOp_ResponseRange{ResponseRange: rr}}
		case *pb.RequestOp_RequestPut:
			pr, err := w.ExecPut(r.RequestPut)
			if err != nil {
				return nil, err
			}
			out = &pb.ResponseOp{Response: &pb.ResponseOp_ResponsePut{ResponsePut: pr}}
		case *pb.RequestOp_RequestDeleteRange:
			dr, err := w.ExecDeleteRange(r.RequestDeleteRange)
			if err != nil {
				return nil, err
			}
			out = &pb.ResponseOp{Response: &pb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: dr}}
		case *pb.RequestOp_RequestTxn:
			tr, err := w.runTxn(r.RequestTxn, plan.nested[nested])
			if err != nil {
				return nil, err
			}
			nested++
			out = &pb.ResponseOp{Response: &pb.ResponseOp_ResponseTxn{ResponseTxn: tr}}
		default:
			continue
		}
		resp.Responses = append(resp.Responses, out)
	}
	resp.Header = header(w.Rev())
	return resp, nil
}

// compare evaluates one compare against the keys it names: every key in
// the range must satisfy it. A value compare on no key fails; other
// targets compare against zero.
func (w *WriteTxn) compare(c *pb.Compare) (bool, error) {
	res, err := w.Range(c.Key, c.RangeEnd, RangeOptions{})
	if err != nil {
		return false, err
	}
	if len(res.KVs) == 0 {
		if c.Target == pb.Compare_VALUE {
			return false, nil
		}
		return compareKV(c, &mvccpb.KeyValue{}), nil
	}
	for _, kv := range res.KVs {
		if !compareKV(c, kv) {
			return false, nil
		}
	}
	return true, nil
}

func compareKV(c *pb.Compare, kv *mvccpb.KeyValue) bool {
	var order int
	switch c.Target {
	case pb.Compare_VALUE:
		order = bytes.Compare(kv.Value, c.GetValue())
	case pb.Compare_CREATE:
		order = compareInt(kv.CreateRevision, c.GetCreateRevision())
	case pb.Compare_MOD:
		order = compareInt(kv.ModRevision, c.GetModRevision())
	case pb.Compare_VERSION:
		order = compareInt(kv.Version, c.GetVersion())
	case pb.Compare_LEASE:
		order = compareInt(kv.Lease, c.GetLease())
	}
	switch c.Result {
	case pb.Compare_EQUAL:
		return order == 0
	case pb.Compare_NOT_EQUAL:
		return order != 0
	case pb.Compare_GREATER:
		return order > 0
	case pb.Compare_LESS:
		return order < 0
	}
	return true // a result out of the enum holds, as in etcd
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
