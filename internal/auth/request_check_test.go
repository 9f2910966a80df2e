package auth

import (
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// TestIsRequestPermitted: with auth on, a write needs write on its keys,
// read too for prevKv and compares, write on the keys of the lease it
// attaches to or revokes; root may do anything.
func TestIsRequestPermitted(t *testing.T) {
	s, db, _ := testStore(t)
	for _, req := range []*pb.InternalRaftRequest{
		{AuthRoleAdd: &pb.AuthRoleAddRequest{Name: "root"}},
		{AuthUserAdd: &pb.AuthUserAddRequest{Name: "root", Options: &authpb.UserAddOptions{NoPassword: true}}},
		{AuthUserGrantRole: &pb.AuthUserGrantRoleRequest{User: "root", Role: "root"}},
		{AuthRoleAdd: &pb.AuthRoleAddRequest{Name: "writer"}},
		{AuthRoleGrantPermission: &pb.AuthRoleGrantPermissionRequest{Name: "writer",
			Perm: &authpb.Permission{PermType: authpb.WRITE, Key: []byte("w/"), RangeEnd: []byte("w0")}}},
		{AuthUserAdd: &pb.AuthUserAddRequest{Name: "bob", Options: &authpb.UserAddOptions{NoPassword: true}}},
		{AuthUserGrantRole: &pb.AuthUserGrantRoleRequest{User: "bob", Role: "writer"}},
		{AuthEnable: &pb.AuthEnableRequest{}},
	} {
		apply(t, s, db, Info{}, req)
	}
	leaseKeys := func(id int64) []string {
		if id == 7 {
			return []string{"w/a", "other"}
		}
		return []string{"w/b"}
	}
	hdr := func(user string) *pb.RequestHeader {
		return &pb.RequestHeader{Username: user, AuthRevision: s.Revision()}
	}
	put := func(user, key string, lease int64, prevKv bool) *pb.InternalRaftRequest {
		return &pb.InternalRaftRequest{Header: hdr(user), Put: &pb.PutRequest{Key: []byte(key), Lease: lease, PrevKv: prevKv}}
	}
	putOp := func(key string, lease int64) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key), Lease: lease}}}
	}
	txn := func(user string, t *pb.TxnRequest) *pb.InternalRaftRequest {
		return &pb.InternalRaftRequest{Header: hdr(user), Txn: t}
	}
	for _, c := range []struct {
		name string
		req  *pb.InternalRaftRequest
		ok   bool
	}{
		{"put in range", put("bob", "w/x", 0, false), true},
		{"put out of range", put("bob", "x", 0, false), false},
		{"put with prevKv, no read", put("bob", "w/x", 0, true), false},
		{"put on a lease of writable keys", put("bob", "w/x", 8, false), true},
		{"put on a lease with another key", put("bob", "w/x", 7, false), false},
		{"root puts anywhere", put("root", "x", 7, true), true},
		{"delete in range", &pb.InternalRaftRequest{Header: hdr("bob"), DeleteRange: &pb.DeleteRangeRequest{Key: []byte("w/"), RangeEnd: []byte("w0")}}, true},
		{"txn comparing a key", &pb.InternalRaftRequest{Header: hdr("bob"), Txn: &pb.TxnRequest{
			Compare: []*pb.Compare{{Key: []byte("w/x")}}}}, false},
		{"txn with a nested put out of range", &pb.InternalRaftRequest{Header: hdr("bob"), Txn: &pb.TxnRequest{Failure: []*pb.RequestOp{
			{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Success: []*pb.RequestOp{
				{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("x")}}}}}}}}}}, false},
		{"revoke a lease of another key", &pb.InternalRaftRequest{Header: hdr("bob"), LeaseRevoke: &pb.LeaseRevokeRequest{ID: 7}}, false},
		{"txn attaching a lease of writable keys", txn("bob", &pb.TxnRequest{Success: []*pb.RequestOp{putOp("w/x", 8)}}), true},
		{"txn attaching a lease of another key", txn("bob", &pb.TxnRequest{Success: []*pb.RequestOp{putOp("w/x", 7)}}), false},
		{"txn attaching it in the failure branch", txn("bob", &pb.TxnRequest{Failure: []*pb.RequestOp{putOp("w/x", 7)}}), false},
		{"txn attaching it in a nested txn", txn("bob", &pb.TxnRequest{Success: []*pb.RequestOp{
			{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Failure: []*pb.RequestOp{putOp("w/y", 7)}}}}}}), false},
	} {
		if err := s.IsRequestPermitted(c.req, leaseKeys); (err == nil) != c.ok {
			t.Errorf("%s: %v, want permitted %v", c.name, err, c.ok)
		}
	}
	// A lease named by many puts of one txn is looked up once.
	lookups := 0
	many := &pb.TxnRequest{}
	for i := range 100 {
		many.Success = append(many.Success, putOp(fmt.Sprintf("w/%d", i), 8))
	}
	if err := s.IsRequestPermitted(txn("bob", many), func(int64) []string { lookups++; return []string{"w/b"} }); err != nil || lookups != 1 {
		t.Errorf("100 puts on one lease: %v after %d lookups of its keys, want permitted after 1", err, lookups)
	}
	if err := s.AreLeaseKeysReadable(Info{Username: "bob", Revision: s.Revision()}, []string{"w/a"}); !errors.Is(err, ErrPermissionDenied) {
		t.Errorf("bob reading w/a: %v, want %v", err, ErrPermissionDenied)
	}
	if err := s.AreLeaseKeysReadable(Info{}, nil); !errors.Is(err, ErrUserEmpty) {
		t.Errorf("no user: %v, want %v", err, ErrUserEmpty)
	}
}

// TestHashPassword: a new or changed password is replaced by its hash; a
// user without one and other requests are left alone.
func TestHashPassword(t *testing.T) {
	s, _, _ := testStore(t)
	add := &pb.InternalRaftRequest{AuthUserAdd: &pb.AuthUserAddRequest{Name: "a", Password: "pw", Options: &authpb.UserAddOptions{}}}
	change := &pb.InternalRaftRequest{AuthUserChangePassword: &pb.AuthUserChangePasswordRequest{Name: "a", Password: "pw2"}}
	for _, req := range []*pb.InternalRaftRequest{add, change} {
		if err := s.HashPassword(req); err != nil {
			t.Fatal(err)
		}
	}
	if add.AuthUserAdd.Password != "" || add.AuthUserAdd.HashedPassword == "" ||
		change.AuthUserChangePassword.Password != "" || change.AuthUserChangePassword.HashedPassword == "" {
		t.Errorf("passwords left in the requests: %v, %v", add, change)
	}
	none := &pb.InternalRaftRequest{AuthUserAdd: &pb.AuthUserAddRequest{Name: "b", Options: &authpb.UserAddOptions{NoPassword: true}}}
	if err := s.HashPassword(none); err != nil || none.AuthUserAdd.HashedPassword != "" {
		t.Errorf("a user without password: %v, hash %q", err, none.AuthUserAdd.HashedPassword)
	}
	if h, ok := HasherForCost(0, nil).(BcryptHasher); !ok || h.Cost != DefaultBcryptCost {
		t.Errorf("cost 0: %v, want the default", HasherForCost(0, nil))
	}
}

// TestAuthenticate: a simple token is proposed, and the password checked
// again when the auth revision moved meanwhile; a wrong password fails.
func TestAuthenticate(t *testing.T) {
	s, db, _ := testStore(t)
	add := &pb.InternalRaftRequest{AuthUserAdd: &pb.AuthUserAddRequest{Name: "a", Password: "pw", Options: &authpb.UserAddOptions{}}}
	if err := s.HashPassword(add); err != nil {
		t.Fatal(err)
	}
	apply(t, s, db, Info{}, add)
	for _, req := range []*pb.InternalRaftRequest{
		{AuthRoleAdd: &pb.AuthRoleAddRequest{Name: "root"}},
		{AuthUserAdd: &pb.AuthUserAddRequest{Name: "root", Options: &authpb.UserAddOptions{NoPassword: true}}},
		{AuthUserGrantRole: &pb.AuthUserGrantRoleRequest{User: "root", Role: "root"}},
		{AuthEnable: &pb.AuthEnableRequest{}},
	} {
		apply(t, s, db, Info{}, req)
	}
	proposals := 0
	propose := func(r *pb.InternalAuthenticateRequest) (*pb.AuthenticateResponse, error) {
		proposals++
		if proposals == 1 { // the revision moves while the first is proposed
			apply(t, s, db, Info{Username: "root", Revision: s.Revision()}, &pb.InternalRaftRequest{AuthRoleAdd: &pb.AuthRoleAddRequest{Name: "r"}})
		}
		return apply(t, s, db, Info{}, &pb.InternalRaftRequest{Authenticate: r}).(*pb.AuthenticateResponse), nil
	}
	resp, err := s.Authenticate("a", "pw", propose)
	if err != nil || resp.Token == "" || proposals != 2 {
		t.Fatalf("Authenticate: %v, %v after %d proposals; want a token after 2", resp, err, proposals)
	}
	if _, err := s.Authenticate("a", "wrong", propose); !errors.Is(err, ErrAuthFailed) {
		t.Errorf("a wrong password: %v, want %v", err, ErrAuthFailed)
	}
}
