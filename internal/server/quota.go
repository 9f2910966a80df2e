package server

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// quotaOverhead is the room a write is expected to take beyond its own bytes.
const quotaOverhead = 512

// CheckQuota refuses a request that would grow the db past
// --quota-backend-bytes, and raises the NOSPACE alarm the first time, as
// etcd does; so too, while the disk has less room than the member keeps
// free (diskspace.go). Reads, deletes and compactions always pass.
func (s *Server) CheckQuota(ctx context.Context, req *pb.InternalRaftRequest) error {
	if !writesData(req) {
		return nil
	}
	if s.alarms.NoSpace() {
		return ErrNoSpace
	}
	if s.diskShort.Load() { // diskSpaceLoop raises the alarm
		return ErrNoSpace
	}
	need := int64(quotaOverhead)
	switch {
	case req.Put != nil:
		need += int64(len(req.Put.Key) + len(req.Put.Value))
	case req.Txn != nil:
		need += int64(txnSize(req.Txn))
	}
	if s.st().Backend().Size()+need <= s.cfg.QuotaBackendBytes {
		return nil
	}
	s.log.Warn("database space exceeded; raising the NOSPACE alarm", "size", s.st().Backend().Size(), "quota", s.cfg.QuotaBackendBytes)
	_, err := s.Propose(ctx, &pb.InternalRaftRequest{Alarm: &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: s.id, Alarm: pb.AlarmType_NOSPACE}})
	if err != nil {
		s.log.Warn("raising the NOSPACE alarm failed", "err", err)
	}
	return ErrNoSpace
}

func txnSize(t *pb.TxnRequest) int {
	n := 0
	for _, ops := range [][]*pb.RequestOp{t.Success, t.Failure} {
		for _, op := range ops {
			if p := op.GetRequestPut(); p != nil {
				n += len(p.Key) + len(p.Value)
			}
			if nested := op.GetRequestTxn(); nested != nil {
				n += txnSize(nested)
			}
		}
	}
	return n
}

// IsLearner reports whether this member is a learner, which serves only
// serializable reads and status.
func (s *Server) IsLearner() bool {
	m, ok := s.members.get(s.id)
	return ok && m.IsLearner
}

// Alarms returns the raised alarms.
func (s *Server) Alarms() []*pb.AlarmMember { return s.alarms.List(0, pb.AlarmType_NONE) }
