package alarm

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"
)

// TestRefusedWhenCorrupt: what fails while CORRUPT is raised is what fails
// on etcd 3.7.3: writes, write txns (nested too), compactions, lease grants
// and revokes; not read-only txns, alarms or membership attributes.
func TestRefusedWhenCorrupt(t *testing.T) {
	put := &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("k")}}}
	del := &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("k")}}}
	get := &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("k")}}}
	nested := func(ops ...*pb.RequestOp) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Success: ops}}}
	}
	for _, c := range []struct {
		name string
		req  *pb.InternalRaftRequest
		want bool
	}{
		{"put", &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k")}}, true},
		{"delete", &pb.InternalRaftRequest{DeleteRange: &pb.DeleteRangeRequest{Key: []byte("k")}}, true},
		{"compaction", &pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: 2}}, true},
		{"lease grant", &pb.InternalRaftRequest{LeaseGrant: &pb.LeaseGrantRequest{TTL: 5}}, true},
		{"lease revoke", &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: 5}}, true},
		{"txn with a put", &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{get, put}}}, true},
		{"txn with a delete on failure", &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Failure: []*pb.RequestOp{del}}}, true},
		{"txn with a nested put", &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{nested(get, put)}}}, true},
		{"read-only txn", &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{get, nested(get)}}}, false},
		{"alarm", &pb.InternalRaftRequest{Alarm: &pb.AlarmRequest{Action: pb.AlarmRequest_DEACTIVATE, Alarm: pb.AlarmType_CORRUPT}}, false},
		{"lease checkpoint", &pb.InternalRaftRequest{LeaseCheckpoint: &pb.LeaseCheckpointRequest{}}, false},
		{"member attributes", &pb.InternalRaftRequest{ClusterMemberAttrSet: &membershippb.ClusterMemberAttrSetRequest{}}, false},
	} {
		if got := RefusedWhenCorrupt(c.req); got != c.want {
			t.Errorf("%s: refused %v, want %v", c.name, got, c.want)
		}
	}
}
