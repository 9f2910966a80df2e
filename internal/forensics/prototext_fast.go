package forensics

import (
	"strconv"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// Hand-written renderings of the requests that fill a WAL (puts, deletes
// and txns of puts and deletes), producing exactly what compactText
// produces for them, without its reflection and appending to a reused
// buffer: dump-logs prints hundreds of thousands of them.

// fastRenderable reports whether appendRequestBody renders r.
func fastRenderable(r *pb.InternalRaftRequest) bool {
	switch {
	case r.Put != nil, r.DeleteRange != nil:
		return true
	case r.Txn != nil:
		for _, ops := range [][]*pb.RequestOp{r.Txn.Success, r.Txn.Failure} {
			for _, op := range ops {
				if op.GetRequestPut() == nil && op.GetRequestDeleteRange() == nil {
					return false
				}
			}
		}
		return true
	}
	return false
}

// appendRequestBody appends the request r carries, as compactText renders
// r without its header. r must be fastRenderable.
func appendRequestBody(dst []byte, r *pb.InternalRaftRequest) []byte {
	switch {
	case r.Put != nil:
		dst = appendPutText(append(dst, "put:{"...), r.Put)
	case r.DeleteRange != nil:
		dst = appendDeleteRangeText(append(dst, "delete_range:{"...), r.DeleteRange)
	case r.Txn != nil:
		dst = appendTxnText(append(dst, "txn:{"...), r.Txn)
	}
	return append(dst, '}')
}

// fieldWriter appends fields separated by single spaces.
type fieldWriter struct {
	dst   []byte
	first bool
}

func (w *fieldWriter) name(n string) {
	if !w.first {
		w.dst = append(w.dst, ' ')
	}
	w.first = false
	w.dst = append(append(w.dst, n...), ':')
}

func (w *fieldWriter) bytes(n string, v []byte, always bool) {
	if len(v) > 0 || always {
		w.name(n)
		w.dst = appendTextProto(w.dst, v)
	}
}

func (w *fieldWriter) int(n string, v int64, always bool) {
	if v != 0 || always {
		w.name(n)
		w.dst = strconv.AppendInt(w.dst, v, 10)
	}
}

func (w *fieldWriter) leaseID(n string, v int64, always bool) {
	if v != 0 || always {
		w.name(n)
		w.dst = appendLeaseID(w.dst, v)
	}
}

func (w *fieldWriter) bool(n string, v bool) {
	if v {
		w.name(n)
		w.dst = append(w.dst, "true"...)
	}
}

func appendPutText(dst []byte, p *pb.PutRequest) []byte {
	w := fieldWriter{dst: dst, first: true}
	w.bytes("key", p.Key, false)
	w.bytes("value", p.Value, false)
	w.leaseID("lease", p.Lease, false)
	w.bool("prev_kv", p.PrevKv)
	w.bool("ignore_value", p.IgnoreValue)
	w.bool("ignore_lease", p.IgnoreLease)
	return w.dst
}

func appendDeleteRangeText(dst []byte, d *pb.DeleteRangeRequest) []byte {
	w := fieldWriter{dst: dst, first: true}
	w.bytes("key", d.Key, false)
	w.bytes("range_end", d.RangeEnd, false)
	w.bool("prev_kv", d.PrevKv)
	return w.dst
}

// appendTxnText appends a txn whose operations are puts and deletes.
func appendTxnText(dst []byte, t *pb.TxnRequest) []byte {
	w := fieldWriter{dst: dst, first: true}
	for _, c := range t.Compare {
		w.name("compare")
		w.dst = append(appendCompareText(append(w.dst, '{'), c), '}')
	}
	for _, branch := range []struct {
		name string
		ops  []*pb.RequestOp
	}{{"success", t.Success}, {"failure", t.Failure}} {
		for _, op := range branch.ops {
			w.name(branch.name)
			if put := op.GetRequestPut(); put != nil {
				w.dst = appendPutText(append(w.dst, "{request_put:{"...), put)
			} else {
				w.dst = appendDeleteRangeText(append(w.dst, "{request_delete_range:{"...), op.GetRequestDeleteRange())
			}
			w.dst = append(w.dst, "}}"...)
		}
	}
	return w.dst
}

func appendCompareText(dst []byte, c *pb.Compare) []byte {
	w := fieldWriter{dst: dst, first: true}
	if c.Result != pb.Compare_EQUAL {
		w.name("result")
		w.dst = append(w.dst, c.Result.String()...)
	}
	if c.Target != pb.Compare_VERSION {
		w.name("target")
		w.dst = append(w.dst, c.Target.String()...)
	}
	w.bytes("key", c.Key, false)
	switch u := c.TargetUnion.(type) {
	case *pb.Compare_Version:
		w.int("version", u.Version, true)
	case *pb.Compare_CreateRevision:
		w.int("create_revision", u.CreateRevision, true)
	case *pb.Compare_ModRevision:
		w.int("mod_revision", u.ModRevision, true)
	case *pb.Compare_Value:
		w.bytes("value", u.Value, true)
	case *pb.Compare_Lease:
		w.leaseID("lease", u.Lease, true)
	}
	w.bytes("range_end", c.RangeEnd, false)
	return w.dst
}
