package store

import (
	"errors"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func vPut(k string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k)}}}
}

func vDel(k, end string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte(k), RangeEnd: []byte(end)}}}
}

func vRanges(n int) []*pb.RequestOp {
	ops := make([]*pb.RequestOp, n)
	for i := range ops {
		ops[i] = &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: fmt.Appendf(nil, "r%d", i)}}}
	}
	return ops
}

func vCompares(n int) []*pb.Compare {
	c := make([]*pb.Compare, n)
	for i := range c {
		c[i] = &pb.Compare{Key: []byte("c")}
	}
	return c
}

func vTxn(t *pb.TxnRequest) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: t}}
}

// vChain is a txn nested depth deep in the success branch, the innermost
// holding leaf.
func vChain(depth int, leaf *pb.RequestOp) *pb.TxnRequest {
	t := &pb.TxnRequest{Success: []*pb.RequestOp{leaf}}
	for i := 1; i < depth; i++ {
		t = &pb.TxnRequest{Success: []*pb.RequestOp{vTxn(t)}}
	}
	return t
}

// TestValidateTxnCountsOpsAsEtcd: --max-txn-ops bounds, along every path
// from the outer txn to a nested one, the sum over the txns on it of the
// largest of their compares, success and failure operations. Each shape's
// largest accepted m is etcd 3.7.3's, found by bisection against it with
// the default 128 (a nested txn counts as one operation of its branch).
func TestValidateTxnCountsOpsAsEtcd(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape func(m int) *pb.TxnRequest
		max   int
	}{
		{"m compares", func(m int) *pb.TxnRequest { return &pb.TxnRequest{Compare: vCompares(m)} }, 128},
		{"m failure ops", func(m int) *pb.TxnRequest { return &pb.TxnRequest{Failure: vRanges(m)} }, 128},
		{"100 compares, m success ops", func(m int) *pb.TxnRequest { return &pb.TxnRequest{Compare: vCompares(100), Success: vRanges(m)} }, 128},
		{"nesting m deep", func(m int) *pb.TxnRequest { return vChain(m, vTxn(&pb.TxnRequest{})) }, 128},
		{"10 ops and a nested txn of m", func(m int) *pb.TxnRequest {
			return &pb.TxnRequest{Success: append(vRanges(10), vTxn(&pb.TxnRequest{Success: vRanges(m)}))}
		}, 117},
		{"a nested txn of m and m", func(m int) *pb.TxnRequest {
			return &pb.TxnRequest{Success: []*pb.RequestOp{vTxn(&pb.TxnRequest{Success: vRanges(m), Failure: vRanges(m)})}}
		}, 127},
		{"a nested txn of m compares", func(m int) *pb.TxnRequest {
			return &pb.TxnRequest{Success: []*pb.RequestOp{vTxn(&pb.TxnRequest{Compare: vCompares(m)})}}
		}, 127},
		{"100 failure ops, a nested txn of m in success", func(m int) *pb.TxnRequest {
			return &pb.TxnRequest{Success: []*pb.RequestOp{vTxn(&pb.TxnRequest{Success: vRanges(m)})}, Failure: vRanges(100)}
		}, 28},
		{"m compares and a nested txn of m", func(m int) *pb.TxnRequest {
			return &pb.TxnRequest{Compare: vCompares(m), Success: []*pb.RequestOp{vTxn(&pb.TxnRequest{Success: vRanges(m)})}}
		}, 64},
		{"two nested txns of m", func(m int) *pb.TxnRequest {
			return &pb.TxnRequest{Success: []*pb.RequestOp{vTxn(&pb.TxnRequest{Success: vRanges(m)}), vTxn(&pb.TxnRequest{Success: vRanges(m)})}}
		}, 126},
		{"1, 50 compares, then m", func(m int) *pb.TxnRequest {
			return &pb.TxnRequest{Success: []*pb.RequestOp{vTxn(&pb.TxnRequest{Compare: vCompares(50), Success: []*pb.RequestOp{vTxn(&pb.TxnRequest{Success: vRanges(m)})}})}}
		}, 77},
	} {
		if err := ValidateTxn(c.shape(c.max), 128); err != nil {
			t.Errorf("%s, m=%d: %v, want accepted", c.name, c.max, err)
		}
		if err := ValidateTxn(c.shape(c.max+1), 128); !errors.Is(err, ErrTooManyOps) {
			t.Errorf("%s, m=%d: %v, want %v", c.name, c.max+1, err, ErrTooManyOps)
		}
	}
}

// TestValidateTxnIsLinear: each level of nesting used to walk the levels
// below it twice, so that 64 levels never answered. A txn nested to the
// limit, and one far deeper (as the apply, with no limit, sees it), take a
// single walk.
func TestValidateTxnIsLinear(t *testing.T) {
	// (Generous bounds, for a busy machine: the old walk took hours.)
	for _, c := range []struct {
		depth, maxOps int
		want          error
		bound         time.Duration
	}{
		{64, 128, nil, 200 * time.Millisecond},
		{128, 128, nil, 200 * time.Millisecond},
		{129, 128, ErrTooManyOps, 200 * time.Millisecond},
		{2000, 0, nil, 2 * time.Second},
	} {
		req := vChain(c.depth, vPut("k"))
		start := time.Now()
		err := ValidateTxn(req, c.maxOps)
		took := time.Since(start)
		if err != c.want {
			t.Errorf("%d levels: %v, want %v", c.depth, err, c.want)
		}
		if took > c.bound {
			t.Errorf("%d levels took %v", c.depth, took)
		}
		t.Logf("%d levels: %v", c.depth, took)
	}
}

// TestValidateTxnOrderAsEtcd: the checks of each txn run in etcd's order:
// its number of operations, then its compares and its operations in order
// (a nested txn in its place), and the duplicate keys of the whole request
// last.
func TestValidateTxnOrderAsEtcd(t *testing.T) {
	for _, c := range []struct {
		name string
		req  *pb.TxnRequest
		want error
	}{
		{"a key put twice, then a nested txn of too many", &pb.TxnRequest{Success: []*pb.RequestOp{vPut("x"), vPut("x"), vTxn(&pb.TxnRequest{Success: vRanges(200)})}}, ErrTooManyOps},
		{"an empty key, then a nested txn of too many", &pb.TxnRequest{Success: []*pb.RequestOp{vPut(""), vTxn(&pb.TxnRequest{Success: vRanges(200)})}}, ErrEmptyKey},
		{"a nested txn of too many, then an empty key", &pb.TxnRequest{Success: []*pb.RequestOp{vTxn(&pb.TxnRequest{Success: vRanges(200)}), vPut("")}}, ErrTooManyOps},
		{"an empty op, then too many failure ops", &pb.TxnRequest{Success: []*pb.RequestOp{{}}, Failure: vRanges(200)}, ErrTooManyOps},
		{"a key put twice, then an empty key", &pb.TxnRequest{Success: []*pb.RequestOp{vPut("x"), vPut("x"), vPut("")}}, ErrEmptyKey},
		{"a key put twice, then an empty op", &pb.TxnRequest{Success: []*pb.RequestOp{vPut("x"), vPut("x"), {}}}, ErrKeyNotFound},
		{"a key put twice, then a nested empty key", &pb.TxnRequest{Success: []*pb.RequestOp{vPut("x"), vPut("x"), vTxn(&pb.TxnRequest{Success: []*pb.RequestOp{vPut("")}})}}, ErrEmptyKey},
	} {
		if err := ValidateTxn(c.req, 128); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// TestValidateTxnDuplicatesAsEtcd: a key may be written once by one run of
// a txn; writes that cannot run together (the two branches of a nested
// txn) do not collide. etcd 3.7.3 accepts and refuses these alike.
func TestValidateTxnDuplicatesAsEtcd(t *testing.T) {
	nested := func(s, f []*pb.RequestOp) *pb.RequestOp { return vTxn(&pb.TxnRequest{Success: s, Failure: f}) }
	ops := func(o ...*pb.RequestOp) []*pb.RequestOp { return o }
	for _, c := range []struct {
		name string
		ops  []*pb.RequestOp
		dup  bool
	}{
		{"a key put and deleted in the two branches of a nested txn", ops(nested(ops(vPut("x")), ops(vDel("x", "")))), false},
		{"a key put in two nested txns", ops(nested(ops(vPut("x")), nil), nested(nil, ops(vPut("x")))), true},
		{"a key deleted in a nested txn, then put", ops(nested(ops(vDel("x", "")), nil), vPut("x")), true},
		{"a key put, then deleted in a nested failure branch", ops(vPut("y"), nested(nil, ops(vDel("y", "")))), true},
		{"a key put, then in a range deleted deeper down", ops(vPut("y"), nested(ops(nested(nil, ops(vDel("x", "z")))), nil)), true},
		{"a key deleted twice", ops(vDel("x", ""), vDel("x", "")), false},
		{"a range deleted, then a key in it put", ops(vDel("x", "z"), vPut("y")), true},
		{"a key put, and an empty range deleted", ops(vPut("b"), vDel("b", "a")), false},
		{"a key put in a nested txn's two branches", ops(vPut("w"), nested(ops(vPut("y")), ops(vPut("y")))), false},
	} {
		err := ValidateTxn(&pb.TxnRequest{Success: c.ops}, 128)
		if c.dup != errors.Is(err, ErrDuplicateKey) || (!c.dup && err != nil) {
			t.Errorf("%s: %v, want duplicate %v", c.name, err, c.dup)
		}
	}
}

// TestValidateRangeSortOptions: sort options out of their enums are
// refused, alone or in a txn at any depth, as etcd refuses them.
func TestValidateRangeSortOptions(t *testing.T) {
	for _, r := range []*pb.RangeRequest{
		{Key: []byte("a"), SortTarget: 7},
		{Key: []byte("a"), SortTarget: -1},
		{Key: []byte("a"), SortOrder: 3},
		{Key: []byte("a"), SortOrder: -1},
	} {
		if err := ValidateRange(r); err != ErrInvalidSortOption {
			t.Errorf("%v: %v, want %v", r, err, ErrInvalidSortOption)
		}
		op := &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: r}}
		if err := ValidateTxn(&pb.TxnRequest{Failure: []*pb.RequestOp{vTxn(&pb.TxnRequest{Success: []*pb.RequestOp{op}})}}, 128); err != ErrInvalidSortOption {
			t.Errorf("%v nested in a txn: %v, want %v", r, err, ErrInvalidSortOption)
		}
	}
	if err := ValidateRange(&pb.RangeRequest{Key: []byte("a"), SortTarget: pb.RangeRequest_MOD, SortOrder: pb.RangeRequest_DESCEND}); err != nil {
		t.Errorf("valid sort options: %v", err)
	}
}
