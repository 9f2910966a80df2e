// Package namespace confines the clients of a proxy to the keys under a
// prefix (etcd's `grpc-proxy start --namespace`): every key and range of a
// request gets the prefix, every key of a response loses it, and the range
// end "\x00" (every key from the start) ends at the last key of the
// namespace, so that a tenant cannot read or write outside it.
//
// It knows the etcd messages (etcdserverpb) as types, and the Election and
// Lock messages by their field numbers only, which it rewrites on the wire.
package namespace

import (
	"bytes"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Prefix is the namespace: the bytes before every key of its clients.
type Prefix []byte

// Key is k in the cluster's key space.
func (p Prefix) Key(k []byte) []byte {
	return append(append(make([]byte, 0, len(p)+len(k)), p...), k...)
}

// RangeEnd is the end of a range in the cluster's key space. An empty end
// (one key) stays empty; "\x00" (every key from the start) and an end
// past every key of the namespace become the end of the namespace.
func (p Prefix) RangeEnd(end []byte) []byte {
	if len(end) == 0 {
		return nil
	}
	if bytes.Equal(end, []byte{0}) {
		return p.end()
	}
	return p.Key(end)
}

// end is the first key after every key that starts with p, or "\x00"
// (no end) when there is none (p is all 0xff, or empty).
func (p Prefix) end() []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0}
}

// Strip is a key of the cluster's key space as the namespace's client sees it.
func (p Prefix) Strip(k []byte) []byte {
	return bytes.TrimPrefix(k, p)
}

// Has says whether k, in the cluster's key space, is in the namespace.
func (p Prefix) Has(k []byte) bool { return bytes.HasPrefix(k, p) }

// The request methods below change the keys of a request in place; the
// response methods strip the keys of a response in place. The caller has
// checked that the keys of a request are not empty (etcd refuses those).

func (p Prefix) RangeRequest(r *pb.RangeRequest) {
	r.Key, r.RangeEnd = p.Key(r.Key), p.RangeEnd(r.RangeEnd)
}

func (p Prefix) PutRequest(r *pb.PutRequest) { r.Key = p.Key(r.Key) }

func (p Prefix) DeleteRangeRequest(r *pb.DeleteRangeRequest) {
	r.Key, r.RangeEnd = p.Key(r.Key), p.RangeEnd(r.RangeEnd)
}

// TxnRequest changes the compares and the operations of both branches,
// nested transactions included.
func (p Prefix) TxnRequest(r *pb.TxnRequest) {
	for _, c := range r.Compare {
		c.Key, c.RangeEnd = p.Key(c.Key), p.RangeEnd(c.RangeEnd)
	}
	for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
		for _, op := range ops {
			switch o := op.Request.(type) {
			case *pb.RequestOp_RequestRange:
				p.RangeRequest(o.RequestRange)
			case *pb.RequestOp_RequestPut:
				p.PutRequest(o.RequestPut)
			case *pb.RequestOp_RequestDeleteRange:
				p.DeleteRangeRequest(o.RequestDeleteRange)
			case *pb.RequestOp_RequestTxn:
				p.TxnRequest(o.RequestTxn)
			}
		}
	}
}

// WatchCreateRequest changes the watched keys.
func (p Prefix) WatchCreateRequest(r *pb.WatchCreateRequest) {
	r.Key, r.RangeEnd = p.Key(r.Key), p.RangeEnd(r.RangeEnd)
}

// KeyValues strips the keys of kvs, in place.
func (p Prefix) KeyValues(kvs []*mvccpb.KeyValue) {
	for _, kv := range kvs {
		if kv != nil {
			kv.Key = p.Strip(kv.Key)
		}
	}
}

func (p Prefix) RangeResponse(r *pb.RangeResponse) { p.KeyValues(r.Kvs) }

func (p Prefix) PutResponse(r *pb.PutResponse) {
	if r.PrevKv != nil {
		p.KeyValues([]*mvccpb.KeyValue{r.PrevKv})
	}
}

func (p Prefix) DeleteRangeResponse(r *pb.DeleteRangeResponse) { p.KeyValues(r.PrevKvs) }

func (p Prefix) TxnResponse(r *pb.TxnResponse) {
	for _, op := range r.Responses {
		switch o := op.Response.(type) {
		case *pb.ResponseOp_ResponseRange:
			p.RangeResponse(o.ResponseRange)
		case *pb.ResponseOp_ResponsePut:
			p.PutResponse(o.ResponsePut)
		case *pb.ResponseOp_ResponseDeleteRange:
			p.DeleteRangeResponse(o.ResponseDeleteRange)
		case *pb.ResponseOp_ResponseTxn:
			p.TxnResponse(o.ResponseTxn)
		}
	}
}

// Events strips the keys of watch events (and of their previous values).
func (p Prefix) Events(evs []*mvccpb.Event) {
	for _, ev := range evs {
		p.KeyValues([]*mvccpb.KeyValue{ev.Kv, ev.PrevKv})
	}
}

// LeaseTimeToLiveResponse keeps the keys of the namespace that the lease
// is attached to, stripped: the others are not the tenant's to see.
func (p Prefix) LeaseTimeToLiveResponse(r *pb.LeaseTimeToLiveResponse) {
	keys := r.Keys[:0]
	for _, k := range r.Keys {
		if p.Has(k) {
			keys = append(keys, p.Strip(k))
		}
	}
	r.Keys = keys
}
