package store

import (
	"bytes"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// ValidateTxn checks a txn request before it is proposed or applied: at most
// maxOps operations per branch (0: no limit), no empty operation, valid
// puts, and no key written twice by one execution.
func ValidateTxn(req *pb.TxnRequest, maxOps int) error {
	if maxOps > 0 && (len(req.Success) > maxOps || len(req.Failure) > maxOps) {
		return ErrTooManyOps
	}
	for _, c := range req.Compare {
		if len(c.Key) == 0 {
			return ErrEmptyKey
		}
	}
	for _, branch := range [][]*pb.RequestOp{req.Success, req.Failure} {
		if _, err := branchWrites(branch, maxOps); err != nil {
			return err
		}
	}
	return nil
}

// writeSet is what a branch of a txn may write.
type writeSet struct {
	puts map[string]struct{}
	dels []keyRange
}

type keyRange struct{ key, end []byte }

func (r keyRange) contains(key []byte) bool {
	switch {
	case len(r.end) == 0:
		return bytes.Equal(key, r.key)
	case isInfiniteEnd(r.end):
		return bytes.Compare(key, r.key) >= 0
	default:
		return bytes.Compare(key, r.key) >= 0 && bytes.Compare(key, r.end) < 0
	}
}

// branchWrites collects the writes of a branch, including those of nested
// txns (either of whose branches may run), and rejects a key put twice or
// put and deleted.
func branchWrites(ops []*pb.RequestOp, maxOps int) (*writeSet, error) {
	ws := &writeSet{puts: make(map[string]struct{})}
	addPut := func(key string) error {
		if _, dup := ws.puts[key]; dup {
			return ErrDuplicateKey
		}
		ws.puts[key] = struct{}{}
		return nil
	}
	for _, op := range ops {
		switch r := op.Request.(type) {
		case *pb.RequestOp_RequestRange:
			if len(r.RequestRange.GetKey()) == 0 {
				return nil, ErrEmptyKey
			}
		case *pb.RequestOp_RequestPut:
			if err := ValidatePut(r.RequestPut); err != nil {
				return nil, err
			}
			if err := addPut(string(r.RequestPut.Key)); err != nil {
				return nil, err
			}
		case *pb.RequestOp_RequestDeleteRange:
			if len(r.RequestDeleteRange.GetKey()) == 0 {
				return nil, ErrEmptyKey
			}
			ws.dels = append(ws.dels, keyRange{r.RequestDeleteRange.Key, r.RequestDeleteRange.RangeEnd})
		case *pb.RequestOp_RequestTxn:
			nested := r.RequestTxn
			if err := ValidateTxn(nested, maxOps); err != nil {
				return nil, err
			}
			either := map[string]struct{}{}
			for _, branch := range [][]*pb.RequestOp{nested.Success, nested.Failure} {
				inner, err := branchWrites(branch, maxOps)
				if err != nil {
					return nil, err
				}
				for k := range inner.puts {
					either[k] = struct{}{}
				}
				ws.dels = append(ws.dels, inner.dels...)
			}
			for k := range either {
				if err := addPut(k); err != nil {
					return nil, err
				}
			}
		default:
			// A RequestOp with no request in it: etcd refuses the txn with
			// this error (at the API, before proposing), in either branch.
			return nil, ErrKeyNotFound
		}
	}
	for k := range ws.puts {
		for _, d := range ws.dels {
			if d.contains([]byte(k)) {
				return nil, ErrDuplicateKey
			}
		}
	}
	return ws, nil
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
// operations would meet: reads of compacted or future revisions, puts
// that keep the value or lease of a key that does not exist and puts to a
// lease the lease check refuses (see CheckLeases).
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
			if put.IgnoreValue || put.IgnoreLease {
				if prev, err := w.prevKV(put.Key, true); err != nil || prev == nil {
					if err == nil {
						err = ErrKeyNotFound
					}
					return err
				}
			}
			if err := w.checkLease(put.Lease); err != nil {
				return err
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
	return false
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
