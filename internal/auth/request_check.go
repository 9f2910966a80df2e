package auth

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// The permission checks of requests at apply time, and of the lease
// queries whose answers name keys. leaseKeys lists the keys attached to a
// lease (the store knows them, not the auth state).

// HeaderInfo is who made a proposal, from its header.
func HeaderInfo(req *pb.InternalRaftRequest) Info {
	if h := req.Header; h != nil {
		return Info{Username: h.Username, Revision: h.AuthRevision}
	}
	return Info{}
}

// IsRequestPermitted checks, at apply time and against the auth state at
// this point of the log, that the user in a write's header may make it; a
// header whose auth revision is older than the store's is refused with
// ErrAuthOldRevision, so that the client checks again.
func (s *Store) IsRequestPermitted(req *pb.InternalRaftRequest, leaseKeys func(id int64) []string) error {
	if !s.Enabled() {
		return nil
	}
	c := &requestCheck{s: s, info: HeaderInfo(req), leaseKeys: leaseKeys}
	switch {
	case req.Put != nil:
		return c.put(req.Put)
	case req.DeleteRange != nil:
		return c.deleteRange(req.DeleteRange)
	case req.Txn != nil:
		return c.txn(req.Txn)
	case req.LeaseRevoke != nil:
		return c.leaseKeysWritable(req.LeaseRevoke.ID)
	}
	return nil
}

// requestCheck is the permission check of one request: every key it reads
// or writes, at any depth of a txn, whichever branch runs. A request is
// checked by the same function whether it comes alone or as an operation
// of a txn. It visits each operation once, and each lease once.
type requestCheck struct {
	s         *Store
	info      Info
	leaseKeys func(id int64) []string
	leases    map[int64]bool // leases already found writable
}

// rangeOp checks a range: read on it.
func (c *requestCheck) rangeOp(r *pb.RangeRequest) error {
	return c.s.IsRangePermitted(c.info, r.Key, r.RangeEnd)
}

// put checks a put: write on its key, read too when it asks for the
// previous value, and write on the keys already attached to its lease
// (whoever cannot revoke a lease must not extend it).
func (c *requestCheck) put(r *pb.PutRequest) error {
	if err := c.s.IsPutPermitted(c.info, r.Key); err != nil {
		return err
	}
	if r.Lease != 0 {
		if err := c.leaseKeysWritable(r.Lease); err != nil {
			return err
		}
	}
	if r.PrevKv {
		return c.s.IsRangePermitted(c.info, r.Key, nil)
	}
	return nil
}

// deleteRange checks a delete: write on the range, and read when it asks
// for the previous values.
func (c *requestCheck) deleteRange(r *pb.DeleteRangeRequest) error {
	if err := c.s.IsDeleteRangePermitted(c.info, r.Key, r.RangeEnd); err != nil {
		return err
	}
	if r.PrevKv {
		return c.s.IsRangePermitted(c.info, r.Key, r.RangeEnd)
	}
	return nil
}

// txn checks a txn: read on every compared key, and every operation of
// both branches, nested txns included, whichever runs.
func (c *requestCheck) txn(t *pb.TxnRequest) error {
	for _, cmp := range t.Compare {
		if err := c.s.IsRangePermitted(c.info, cmp.Key, cmp.RangeEnd); err != nil {
			return err
		}
	}
	for _, ops := range [][]*pb.RequestOp{t.Success, t.Failure} {
		for _, op := range ops {
			if err := c.op(op); err != nil {
				return err
			}
		}
	}
	return nil
}

// op checks one operation of a txn.
func (c *requestCheck) op(op *pb.RequestOp) error {
	switch r := op.Request.(type) {
	case *pb.RequestOp_RequestRange:
		return c.rangeOp(r.RequestRange)
	case *pb.RequestOp_RequestPut:
		return c.put(r.RequestPut)
	case *pb.RequestOp_RequestDeleteRange:
		return c.deleteRange(r.RequestDeleteRange)
	case *pb.RequestOp_RequestTxn:
		return c.txn(r.RequestTxn)
	}
	return nil
}

// leaseKeysWritable checks write on every key attached to a lease.
func (c *requestCheck) leaseKeysWritable(id int64) error {
	if c.leases[id] {
		return nil
	}
	if err := c.s.AreLeaseKeysWritable(c.info, c.leaseKeys(id)); err != nil {
		return err
	}
	if c.leases == nil {
		c.leases = make(map[int64]bool)
	}
	c.leases[id] = true
	return nil
}

// AreLeaseKeysWritable checks write on every key attached to a lease, for
// whoever revokes it, renews it or attaches a key to it.
func (s *Store) AreLeaseKeysWritable(info Info, keys []string) error {
	if s.IsAdminPermitted(info) == nil {
		return nil
	}
	for _, k := range keys {
		if err := s.IsPutPermitted(info, []byte(k)); err != nil {
			return err
		}
	}
	return nil
}

// AreLeaseKeysReadable checks read on every key attached to a lease, for
// LeaseTimeToLive, whose answer may name them.
func (s *Store) AreLeaseKeysReadable(info Info, keys []string) error {
	if err := s.IsAuthenticated(info); err != nil {
		return err
	}
	if s.IsAdminPermitted(info) == nil {
		return nil
	}
	for _, k := range keys {
		if err := s.IsRangePermitted(info, []byte(k), nil); err != nil {
			return err
		}
	}
	return nil
}
