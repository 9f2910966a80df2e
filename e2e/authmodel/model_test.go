package authmodel

import (
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// modelWith is a model where user u holds the permissions ps.
func modelWith(ps ...perm) *model {
	m := newModel()
	m.users["u"] = map[string]bool{"r": true}
	m.roles["r"] = ps
	m.tokenOK["u"] = true
	return m
}

func TestCoverageIsTheUnionOfThePermissions(t *testing.T) {
	m := modelWith(
		perm{"/a", "/b", authpb.READ},      // [/a, /b)
		perm{"/b", "", authpb.READWRITE},   // /b alone
		perm{"/b\x00", "/c", authpb.READ},  // the rest up to /c
		perm{"/d", "\x00", authpb.WRITE},   // /d and on
		perm{"/x", "/y", authpb.READWRITE}, // apart
	)
	for _, c := range []struct {
		key, end string
		typ      authpb.Permission_Type
		want     bool
	}{
		{"/a", "/c", authpb.READ, true}, // three permissions that touch
		{"/a", "/c\x00", authpb.READ, false},
		{"/a", "/c", authpb.WRITE, false},
		{"/b", "", authpb.WRITE, true},
		{"/b/c", "", authpb.WRITE, false},
		{"/d", "\x00", authpb.WRITE, true},
		{"/e", "\x00", authpb.WRITE, true},
		{"/c", "\x00", authpb.WRITE, false},
		{"/a", "/y", authpb.READ, false}, // a hole between /c and /x
		{"\x00", "\x00", authpb.READ, false},
	} {
		if got := m.covered("u", c.key, c.end, c.typ); got != c.want {
			t.Errorf("%v on [%q, %q): %v, want %v", c.typ, c.key, c.end, got, c.want)
		}
	}
}

func TestVerdicts(t *testing.T) {
	m := modelWith(perm{"/a", "", authpb.READWRITE}, perm{"/b", "", authpb.WRITE})
	m.users["nobody"], m.tokenOK["nobody"] = map[string]bool{}, true
	m.leases[7] = &lease{ttl: 60, keys: map[string]bool{"/c": true}}
	put := func(k string, prev bool, lease int64) *pb.PutRequest {
		return &pb.PutRequest{Key: []byte(k), PrevKv: prev, Lease: lease}
	}
	for _, c := range []struct {
		who  string
		req  any
		want string
	}{
		{"u", put("/b", false, 0), outOK},
		{"u", put("/b", true, 0), outDenied},  // prev_kv needs READ
		{"u", put("/a", false, 7), outDenied}, // the lease holds /c, not writable
		{"u", put("/a", false, 9), outLeaseAbsent},
		{"u", &pb.LeaseRevokeRequest{ID: 7}, outDenied},
		{"u", &pb.LeaseKeepAliveRequest{ID: 7}, outDenied},
		{"u", &pb.TxnRequest{Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{
			Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("/b")}}}}}}}}}, outDenied},
		{"u", &pb.TxnRequest{Compare: []*pb.Compare{{Key: []byte("/a")}}}, outOK},
		{"u", &pb.RangeRequest{}, outNoKey},
		{"nobody", &pb.StatusRequest{}, outOK},
		{"nobody", &pb.HashKVRequest{}, outDenied},
		{"nobody", &pb.AuthUserGetRequest{Name: "nobody"}, outOK},
		{"nobody", &pb.AuthUserGetRequest{Name: "u"}, outDenied},
		{"u", &pb.AuthRoleGetRequest{Role: "r"}, outOK},
		{anonymous, &pb.StatusRequest{}, outNoUser},
		{anonymous, &pb.AuthStatusRequest{}, outOK},
		{badToken, &pb.RangeRequest{Key: []byte("/a")}, outBadToken},
		{rootUser, &pb.AuthRoleGrantPermissionRequest{Name: "r", Perm: &authpb.Permission{Key: []byte("/c"), RangeEnd: []byte("/a")}}, outAuthMgmt},
	} {
		if got := m.verdict(c.who, c.req); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.who, oneLine(c.req), got, c.want)
		}
	}
}

func TestNestedComparesSeeTheKeysBeforeTheTxn(t *testing.T) {
	m := newModel()
	// The nested txn's compare (/a does not exist) is decided before the
	// outer put of /a.
	inner := &pb.TxnRequest{Compare: []*pb.Compare{{Key: []byte("/a"), Target: pb.Compare_VERSION,
		Result: pb.Compare_EQUAL, TargetUnion: &pb.Compare_Version{Version: 0}}}}
	outer := &pb.TxnRequest{Success: []*pb.RequestOp{
		{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("/a"), Value: []byte("v")}}},
		{Request: &pb.RequestOp_RequestTxn{RequestTxn: inner}},
	}}
	resp := m.apply(rootUser, outer, allIdentities).(*pb.TxnResponse)
	if !resp.Responses[1].GetResponseTxn().Succeeded {
		t.Errorf("nested txn took the failure branch: its compare saw the outer put")
	}
	if m.rev != 2 || m.kv["/a"].Version != 1 {
		t.Errorf("after the txn: revision %d, /a %v", m.rev, m.kv["/a"])
	}
}
