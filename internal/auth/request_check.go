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
	info := HeaderInfo(req)
	switch {
	case req.Put != nil:
		return s.isPutRequestPermitted(info, req.Put, leaseKeys)
	case req.DeleteRange != nil:
		return s.isDeleteRangeRequestPermitted(info, req.DeleteRange)
	case req.Txn != nil:
		return s.isTxnPermitted(info, req.Txn)
	case req.LeaseRevoke != nil:
		return s.areLeaseKeysWritable(info, leaseKeys, req.LeaseRevoke.ID)
	}
	return nil
}

// isPutRequestPermitted checks a put: write on its key, read too when it
// asks for the previous value, and write on the keys already attached to
// its lease (whoever cannot revoke a lease must not extend it).
func (s *Store) isPutRequestPermitted(info Info, r *pb.PutRequest, leaseKeys func(id int64) []string) error {
	if err := s.IsPutPermitted(info, r.Key); err != nil {
		return err
	}
	if r.Lease != 0 {
		if err := s.areLeaseKeysWritable(info, leaseKeys, r.Lease); err != nil {
			return err
		}
	}
	if r.PrevKv {
		return s.IsRangePermitted(info, r.Key, nil)
	}
	return nil
}

// isDeleteRangeRequestPermitted checks a delete: write on the range, and
// read when it asks for the previous values.
func (s *Store) isDeleteRangeRequestPermitted(info Info, r *pb.DeleteRangeRequest) error {
	if err := s.IsDeleteRangePermitted(info, r.Key, r.RangeEnd); err != nil {
		return err
	}
	if r.PrevKv {
		return s.IsRangePermitted(info, r.Key, r.RangeEnd)
	}
	return nil
}

// isTxnPermitted checks a txn: read on every compared key, and every
// operation of both branches, whichever runs.
func (s *Store) isTxnPermitted(info Info, t *pb.TxnRequest) error {
	for _, c := range t.Compare {
		if err := s.IsRangePermitted(info, c.Key, c.RangeEnd); err != nil {
			return err
		}
	}
	for _, ops := range [][]*pb.RequestOp{t.Success, t.Failure} {
		for _, op := range ops {
			var err error
			switch {
			case op.GetRequestRange() != nil:
				r := op.GetRequestRange()
				err = s.IsRangePermitted(info, r.Key, r.RangeEnd)
			case op.GetRequestPut() != nil:
				r := op.GetRequestPut()
				if err = s.IsPutPermitted(info, r.Key); err == nil && r.PrevKv {
					err = s.IsRangePermitted(info, r.Key, nil)
				}
			case op.GetRequestDeleteRange() != nil:
				err = s.isDeleteRangeRequestPermitted(info, op.GetRequestDeleteRange())
			case op.GetRequestTxn() != nil:
				err = s.isTxnPermitted(info, op.GetRequestTxn())
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// areLeaseKeysWritable checks write on every key attached to a lease.
func (s *Store) areLeaseKeysWritable(info Info, leaseKeys func(id int64) []string, id int64) error {
	if s.IsAdminPermitted(info) == nil {
		return nil
	}
	for _, k := range leaseKeys(id) {
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
