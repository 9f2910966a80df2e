package server

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/auth"
)

// The permission checks of writes at apply time, and of the lease queries
// whose answers name keys.

// checkApplyPermission checks, at apply time and against the auth state at
// this point of the log, that the user in a write's header may make it; a
// header whose auth revision is older than the store's is refused with
// auth.ErrAuthOldRevision, so that the client checks again.
func (s *Server) checkApplyPermission(req *pb.InternalRaftRequest) error {
	as := s.auth
	if !as.Enabled() {
		return nil
	}
	info := headerInfo(req)
	switch {
	case req.Put != nil:
		return s.checkPutPermission(info, req.Put)
	case req.DeleteRange != nil:
		return checkDeleteRangePermission(as, info, req.DeleteRange)
	case req.Txn != nil:
		return checkTxnPermission(as, info, req.Txn)
	case req.LeaseRevoke != nil:
		return s.checkLeaseKeysWritable(info, req.LeaseRevoke.ID)
	}
	return nil
}

// checkPutPermission checks a put: write on its key, read too when it asks
// for the previous value, and write on the keys already attached to its
// lease (whoever cannot revoke a lease must not extend it).
func (s *Server) checkPutPermission(info auth.Info, r *pb.PutRequest) error {
	if err := s.auth.IsPutPermitted(info, r.Key); err != nil {
		return err
	}
	if r.Lease != 0 {
		if err := s.checkLeaseKeysWritable(info, r.Lease); err != nil {
			return err
		}
	}
	if r.PrevKv {
		return s.auth.IsRangePermitted(info, r.Key, nil)
	}
	return nil
}

// checkDeleteRangePermission checks a delete: write on the range, and read
// when it asks for the previous values.
func checkDeleteRangePermission(as *auth.Store, info auth.Info, r *pb.DeleteRangeRequest) error {
	if err := as.IsDeleteRangePermitted(info, r.Key, r.RangeEnd); err != nil {
		return err
	}
	if r.PrevKv {
		return as.IsRangePermitted(info, r.Key, r.RangeEnd)
	}
	return nil
}

// checkTxnPermission checks a txn: read on every compared key, and every
// operation of both branches, whichever runs.
func checkTxnPermission(as *auth.Store, info auth.Info, t *pb.TxnRequest) error {
	for _, c := range t.Compare {
		if err := as.IsRangePermitted(info, c.Key, c.RangeEnd); err != nil {
			return err
		}
	}
	for _, ops := range [][]*pb.RequestOp{t.Success, t.Failure} {
		for _, op := range ops {
			var err error
			switch {
			case op.GetRequestRange() != nil:
				r := op.GetRequestRange()
				err = as.IsRangePermitted(info, r.Key, r.RangeEnd)
			case op.GetRequestPut() != nil:
				r := op.GetRequestPut()
				if err = as.IsPutPermitted(info, r.Key); err == nil && r.PrevKv {
					err = as.IsRangePermitted(info, r.Key, nil)
				}
			case op.GetRequestDeleteRange() != nil:
				err = checkDeleteRangePermission(as, info, op.GetRequestDeleteRange())
			case op.GetRequestTxn() != nil:
				err = checkTxnPermission(as, info, op.GetRequestTxn())
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// checkLeaseKeysWritable checks write on every key attached to a lease.
func (s *Server) checkLeaseKeysWritable(info auth.Info, id int64) error {
	if s.auth.IsAdminPermitted(info) == nil {
		return nil
	}
	for _, k := range s.st().LeaseKeys(id) {
		if err := s.auth.IsPutPermitted(info, []byte(k)); err != nil {
			return err
		}
	}
	return nil
}

// CheckLeaseKeysReadable checks read on every key attached to a lease, for
// LeaseTimeToLive, whose answer may name them.
func (s *Server) CheckLeaseKeysReadable(info auth.Info, id int64) error {
	if err := s.auth.IsAuthenticated(info); err != nil {
		return err
	}
	if s.auth.IsAdminPermitted(info) == nil {
		return nil
	}
	for _, k := range s.st().LeaseKeys(id) {
		if err := s.auth.IsRangePermitted(info, []byte(k), nil); err != nil {
			return err
		}
	}
	return nil
}
