package auth

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/store"
)

// The values etcd 3.7.3 wrote for user alice and role reader in the
// fixture (testdata/etcd-3.7.3, README there).
const (
	fixtureAliceHash = "$2a$10$iTjideIPrLyHcQNSXbaNZOra8agfAdH2sveWIUe3FPPQpDerKIG3K"
	fixtureAlice     = "0a05616c696365123c2432612431302469546a6964654950724c794863514e535862614e5a4f72613861676641644832737665574955653346505051704465724b4947334b1a067265616465722200"
	fixtureReader    = "0a06726561646572120e12052f6170702f1a052f61707030"
)

func TestEncodingsAreEtcds(t *testing.T) {
	s, db, _ := testStore(t)
	apply(t, s, db, Info{}, &pb.InternalRaftRequest{AuthRoleAdd: &pb.AuthRoleAddRequest{Name: "reader"}})
	apply(t, s, db, Info{}, &pb.InternalRaftRequest{AuthRoleGrantPermission: &pb.AuthRoleGrantPermissionRequest{
		Name: "reader", Perm: &authpb.Permission{PermType: authpb.READ, Key: []byte("/app/"), RangeEnd: []byte("/app0")}}})
	apply(t, s, db, Info{}, &pb.InternalRaftRequest{AuthUserAdd: &pb.AuthUserAddRequest{
		Name: "alice", HashedPassword: EncodeHashedPassword([]byte(fixtureAliceHash)), Options: &authpb.UserAddOptions{}}})
	apply(t, s, db, Info{}, &pb.InternalRaftRequest{AuthUserGrantRole: &pb.AuthUserGrantRoleRequest{User: "alice", Role: "reader"}})
	if got, _ := db.Get(store.BucketAuthUsers, []byte("alice")); hex.EncodeToString(got) != fixtureAlice {
		t.Errorf("user alice encodes as\n%x\netcd's:\n%s", got, fixtureAlice)
	}
	if got, _ := db.Get(store.BucketAuthRoles, []byte("reader")); hex.EncodeToString(got) != fixtureReader {
		t.Errorf("role reader encodes as\n%x\netcd's:\n%s", got, fixtureReader)
	}
	if got, _ := db.Get(store.BucketAuth, store.AuthRevisionKey); hex.EncodeToString(got) != "0000000000000005" {
		t.Errorf("authRevision %x, want 5 (1 at creation, then 4 changes)", got)
	}
}

// TestLoadsEtcdsFixture reads the auth buckets real etcd wrote: auth on,
// revision 7, root and alice, role reader reading /app/.
func TestLoadsEtcdsFixture(t *testing.T) {
	src, err := os.ReadFile("../../testdata/etcd-3.7.3/data/member/snap/db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(store.Config{Backend: backend.Config{Path: path}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt := st.Backend().Read()
	s := New(Config{Hasher: fastHasher})
	err = s.Load(rt)
	rt.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !s.Enabled() || s.Revision() != 7 {
		t.Fatalf("enabled %v revision %d, etcd's fixture has true 7", s.Enabled(), s.Revision())
	}
	users := apply(t, s, nil, Info{Username: "root", Revision: 7}, &pb.InternalRaftRequest{AuthUserList: &pb.AuthUserListRequest{}}).(*pb.AuthUserListResponse)
	if len(users.Users) != 2 || users.Users[0] != "alice" || users.Users[1] != "root" {
		t.Errorf("users %v", users.Users)
	}
	alice := Info{Username: "alice", Revision: 7}
	if err := s.IsRangePermitted(alice, []byte("/app/config/3"), nil); err != nil {
		t.Errorf("alice reads /app/config/3: %v", err)
	}
	if err := s.IsRangePermitted(alice, []byte("/app/"), []byte("/app0")); err != nil {
		t.Errorf("alice reads the /app/ prefix: %v", err)
	}
	if err := s.IsRangePermitted(alice, []byte("foo"), nil); !errors.Is(err, ErrPermissionDenied) {
		t.Errorf("alice reads foo: %v", err)
	}
	if err := s.IsPutPermitted(alice, []byte("/app/config/3")); !errors.Is(err, ErrPermissionDenied) {
		t.Errorf("alice writes /app/config/3: %v", err)
	}
	if err := s.IsPutPermitted(Info{Username: "root", Revision: 7}, []byte("anything")); err != nil {
		t.Errorf("root writes: %v", err)
	}
	// etcd's bcrypt hash is checked, and a wrong password refused.
	if _, err := s.CheckPassword("alice", "guess"); !errors.Is(err, ErrAuthFailed) {
		t.Errorf("alice logs in with a guess: %v", err)
	}
}

// TestRevisionsFollowEtcd replays the changes whose revisions etcd 3.7.3
// showed (auth_transcript_test.go): every change counts once, a grant of a
// role the user has and enabling do not count, disabling does.
func TestRevisionsFollowEtcd(t *testing.T) {
	s, db, _ := testStore(t)
	steps := []struct {
		req  *pb.InternalRaftRequest
		err  error
		want uint64
	}{
		{&pb.InternalRaftRequest{AuthEnable: &pb.AuthEnableRequest{}}, ErrRootUserNotExist, 1},
		{&pb.InternalRaftRequest{AuthUserAdd: &pb.AuthUserAddRequest{Name: "root", Password: "pw"}}, nil, 2},
		{&pb.InternalRaftRequest{AuthUserAdd: &pb.AuthUserAddRequest{Name: "root", Password: "pw"}}, ErrUserAlreadyExist, 2},
		{&pb.InternalRaftRequest{AuthUserAdd: &pb.AuthUserAddRequest{Name: ""}}, ErrUserEmpty, 2},
		{&pb.InternalRaftRequest{AuthEnable: &pb.AuthEnableRequest{}}, ErrRootRoleNotExist, 2},
		{&pb.InternalRaftRequest{AuthUserGrantRole: &pb.AuthUserGrantRoleRequest{User: "root", Role: "root"}}, nil, 3},
		{&pb.InternalRaftRequest{AuthUserGrantRole: &pb.AuthUserGrantRoleRequest{User: "root", Role: "root"}}, nil, 3},
		{&pb.InternalRaftRequest{AuthUserGrantRole: &pb.AuthUserGrantRoleRequest{User: "root", Role: "nope"}}, ErrRoleNotFound, 3},
		{&pb.InternalRaftRequest{AuthRoleAdd: &pb.AuthRoleAddRequest{Name: "r"}}, nil, 4},
		{&pb.InternalRaftRequest{AuthRoleGrantPermission: &pb.AuthRoleGrantPermissionRequest{Name: "r"}}, ErrPermissionNotGiven, 4},
		{&pb.InternalRaftRequest{AuthRoleGrantPermission: &pb.AuthRoleGrantPermissionRequest{Name: "r", Perm: &authpb.Permission{Key: []byte("b"), RangeEnd: []byte("a")}}}, ErrInvalidAuthMgmt, 4},
		{&pb.InternalRaftRequest{AuthRoleGrantPermission: &pb.AuthRoleGrantPermissionRequest{Name: "r", Perm: &authpb.Permission{Key: []byte("k")}}}, nil, 5},
		{&pb.InternalRaftRequest{AuthRoleGrantPermission: &pb.AuthRoleGrantPermissionRequest{Name: "r", Perm: &authpb.Permission{Key: []byte("k"), PermType: authpb.WRITE}}}, nil, 6},
		{&pb.InternalRaftRequest{AuthRoleRevokePermission: &pb.AuthRoleRevokePermissionRequest{Role: "r", Key: []byte("k"), RangeEnd: []byte("l")}}, ErrPermissionNotGranted, 6},
		{&pb.InternalRaftRequest{AuthEnable: &pb.AuthEnableRequest{}}, nil, 6},
		{&pb.InternalRaftRequest{AuthEnable: &pb.AuthEnableRequest{}}, nil, 6},
		{&pb.InternalRaftRequest{AuthUserDelete: &pb.AuthUserDeleteRequest{Name: "root"}}, ErrInvalidAuthMgmt, 6},
		{&pb.InternalRaftRequest{AuthUserRevokeRole: &pb.AuthUserRevokeRoleRequest{Name: "root", Role: "root"}}, ErrInvalidAuthMgmt, 6},
		{&pb.InternalRaftRequest{AuthDisable: &pb.AuthDisableRequest{}}, nil, 7},
		{&pb.InternalRaftRequest{AuthDisable: &pb.AuthDisableRequest{}}, nil, 7},
		{&pb.InternalRaftRequest{AuthRoleDelete: &pb.AuthRoleDeleteRequest{Role: "r"}}, nil, 8},
	}
	root := Info{Username: "root"}
	for i, st := range steps {
		root.Revision = s.Revision()
		_, err := s.Apply(db, st.req, 10, root)
		if !errors.Is(err, st.err) || s.Revision() != st.want {
			t.Fatalf("step %d %v: err %v revision %d, want %v %d", i, st.req, err, s.Revision(), st.err, st.want)
		}
		stored, _ := db.Get(store.BucketAuth, store.AuthRevisionKey)
		if rev, _ := store.DecodeUint64(stored); rev != st.want {
			t.Fatalf("step %d: stored revision %d, want %d", i, rev, st.want)
		}
	}
	if v, _ := db.Get(store.BucketAuth, store.AuthEnabledKey); len(v) != 1 || v[0] != 0 {
		t.Errorf("authEnabled %x after disabling, want 00", v)
	}
}

// enabledStore has root, alice (role reader: read-write /app/) and auth on.
func enabledStore(t *testing.T) (*Store, memDB, *fakeClock) {
	t.Helper()
	s, db, clock := testStore(t)
	enableAuth(t, s, db)
	return s, db, clock
}

// enableAuth adds root, alice (role reader: read-write /app/) and svc (no
// password), and turns auth on.
func enableAuth(t *testing.T, s *Store, db memDB) {
	t.Helper()
	for _, req := range []*pb.InternalRaftRequest{
		{AuthUserAdd: &pb.AuthUserAddRequest{Name: "root", Password: "rootpw"}},
		{AuthUserGrantRole: &pb.AuthUserGrantRoleRequest{User: "root", Role: "root"}},
		{AuthUserAdd: &pb.AuthUserAddRequest{Name: "alice", Password: "alicepw"}},
		{AuthRoleAdd: &pb.AuthRoleAddRequest{Name: "reader"}},
		{AuthRoleGrantPermission: &pb.AuthRoleGrantPermissionRequest{Name: "reader", Perm: &authpb.Permission{PermType: authpb.READWRITE, Key: []byte("/app/"), RangeEnd: []byte("/app0")}}},
		{AuthUserGrantRole: &pb.AuthUserGrantRoleRequest{User: "alice", Role: "reader"}},
		{AuthUserAdd: &pb.AuthUserAddRequest{Name: "svc", Options: &authpb.UserAddOptions{NoPassword: true}}},
		{AuthEnable: &pb.AuthEnableRequest{}},
	} {
		apply(t, s, db, Info{}, req)
	}
}

func TestPermissionChecks(t *testing.T) {
	s, db, _ := enabledStore(t)
	rev := s.Revision()
	alice, root := Info{Username: "alice", Revision: rev}, Info{Username: "root", Revision: rev}
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"anonymous read", s.IsRangePermitted(Info{}, []byte("/app/x"), nil), ErrUserEmpty},
		{"alice reads /app/x", s.IsRangePermitted(alice, []byte("/app/x"), nil), nil},
		{"alice deletes /app/ prefix", s.IsDeleteRangePermitted(alice, []byte("/app/"), []byte("/app0")), nil},
		{"alice reads everything", s.IsRangePermitted(alice, []byte{0}, []byte{0}), ErrPermissionDenied},
		{"alice with an old revision", s.IsPutPermitted(Info{Username: "alice", Revision: rev - 1}, []byte("/app/x")), ErrAuthOldRevision},
		{"a user that does not exist", s.IsPutPermitted(Info{Username: "ghost", Revision: rev}, []byte("/app/x")), ErrPermissionDenied},
		{"root reads everything", s.IsRangePermitted(root, []byte{0}, []byte{0}), nil},
		{"alice is no admin", s.IsAdminPermitted(alice), ErrPermissionDenied},
		{"anonymous is no admin", s.IsAdminPermitted(Info{}), ErrUserEmpty},
		{"root is admin", s.IsAdminPermitted(root), nil},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	// Auth management is root's, but for a user's own record and roles.
	for _, c := range []struct {
		req  *pb.InternalRaftRequest
		want error
	}{
		{&pb.InternalRaftRequest{AuthUserGet: &pb.AuthUserGetRequest{Name: "alice"}}, nil},
		{&pb.InternalRaftRequest{AuthUserGet: &pb.AuthUserGetRequest{Name: "root"}}, ErrPermissionDenied},
		{&pb.InternalRaftRequest{AuthRoleGet: &pb.AuthRoleGetRequest{Role: "reader"}}, nil},
		{&pb.InternalRaftRequest{AuthRoleGet: &pb.AuthRoleGetRequest{Role: "root"}}, ErrPermissionDenied},
		{&pb.InternalRaftRequest{AuthUserList: &pb.AuthUserListRequest{}}, ErrPermissionDenied},
		{&pb.InternalRaftRequest{AuthUserChangePassword: &pb.AuthUserChangePasswordRequest{Name: "alice", Password: "x"}}, ErrPermissionDenied},
		{&pb.InternalRaftRequest{AuthDisable: &pb.AuthDisableRequest{}}, ErrPermissionDenied},
	} {
		if _, err := s.Apply(db, c.req, 50, alice); !errors.Is(err, c.want) {
			t.Errorf("alice %v: %v, want %v", c.req, err, c.want)
		}
	}
	// A revoked role takes its keys at once.
	apply(t, s, db, root, &pb.InternalRaftRequest{AuthUserRevokeRole: &pb.AuthUserRevokeRoleRequest{Name: "alice", Role: "reader"}})
	if err := s.IsRangePermitted(Info{Username: "alice", Revision: s.Revision()}, []byte("/app/x"), nil); !errors.Is(err, ErrPermissionDenied) {
		t.Errorf("alice reads after losing her role: %v", err)
	}
	// With auth off, everything is permitted to everyone.
	apply(t, s, db, root, &pb.InternalRaftRequest{AuthDisable: &pb.AuthDisableRequest{}})
	if err := s.IsPutPermitted(Info{}, []byte("anything")); err != nil {
		t.Errorf("anonymous write with auth off: %v", err)
	}
}

func TestPasswordsAndTokens(t *testing.T) {
	s, db, clock := enabledStore(t)
	if _, err := s.CheckPassword("alice", "nope"); !errors.Is(err, ErrAuthFailed) {
		t.Errorf("wrong password: %v", err)
	}
	if _, err := s.CheckPassword("ghost", "x"); !errors.Is(err, ErrAuthFailed) {
		t.Errorf("unknown user: %v", err)
	}
	if _, err := s.CheckPassword("svc", ""); !errors.Is(err, ErrNoPasswordUser) {
		t.Errorf("no-password user: %v", err)
	}
	rev, err := s.CheckPassword("alice", "alicepw")
	if err != nil || rev != s.Revision() {
		t.Fatalf("right password: %d %v", rev, err)
	}
	login := func(user string, index uint64) string {
		t.Helper()
		resp, err := s.Apply(db, &pb.InternalRaftRequest{Authenticate: &pb.InternalAuthenticateRequest{Name: user, SimpleToken: "abcdefghijklmnop"}}, index, Info{})
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*pb.AuthenticateResponse).Token
	}
	tok := login("alice", 100)
	if tok != "abcdefghijklmnop.100" {
		t.Fatalf("token %q, want <prefix>.<index>", tok)
	}
	if idx, ok := TokenIndex(tok); !ok || idx != 100 {
		t.Errorf("TokenIndex(%q) = %d %v", tok, idx, ok)
	}
	if info, ok := s.TokenInfo(tok); !ok || info.Username != "alice" || info.Revision != s.Revision() {
		t.Errorf("token info %+v %v", info, ok)
	}
	// Each use extends the token's life; TTL without use ends it.
	clock.now = clock.now.Add(50 * time.Second)
	if _, ok := s.TokenInfo(tok); !ok {
		t.Fatal("token ended before its TTL")
	}
	clock.now = clock.now.Add(50 * time.Second)
	if _, ok := s.TokenInfo(tok); !ok {
		t.Fatal("a used token ended within its TTL of the last use")
	}
	clock.now = clock.now.Add(61 * time.Second)
	if _, ok := s.TokenInfo(tok); ok {
		t.Fatal("token outlived its TTL")
	}
	// A new password ends the user's tokens, not others'.
	tok = login("alice", 100)
	rootTok := apply(t, s, db, Info{}, &pb.InternalRaftRequest{Authenticate: &pb.InternalAuthenticateRequest{Name: "root", SimpleToken: "ABCDEFGHIJKLMNOP"}}).(*pb.AuthenticateResponse).Token
	root := Info{Username: "root", Revision: s.Revision()}
	apply(t, s, db, root, &pb.InternalRaftRequest{AuthUserChangePassword: &pb.AuthUserChangePasswordRequest{Name: "alice", Password: "new"}})
	if _, ok := s.TokenInfo(tok); ok {
		t.Error("alice's token survived her new password")
	}
	if _, ok := s.TokenInfo(rootTok); !ok {
		t.Error("root's token ended with alice's password change")
	}
	if _, err := s.CheckPassword("alice", "new"); err != nil {
		t.Errorf("new password: %v", err)
	}
	// Deleting a user ends its tokens; disabling auth ends all.
	tok = login("alice", 101)
	root.Revision = s.Revision()
	apply(t, s, db, root, &pb.InternalRaftRequest{AuthUserDelete: &pb.AuthUserDeleteRequest{Name: "alice"}})
	if _, ok := s.TokenInfo(tok); ok {
		t.Error("a deleted user's token lives on")
	}
	apply(t, s, db, root, &pb.InternalRaftRequest{AuthDisable: &pb.AuthDisableRequest{}})
	apply(t, s, db, Info{}, &pb.InternalRaftRequest{AuthEnable: &pb.AuthEnableRequest{}})
	if _, ok := s.TokenInfo(rootTok); ok {
		t.Error("a token outlived disabling auth")
	}
	if _, err := s.Apply(db, &pb.InternalRaftRequest{Authenticate: &pb.InternalAuthenticateRequest{Name: "ghost", SimpleToken: "x"}}, 1, Info{}); !errors.Is(err, ErrAuthFailed) {
		t.Errorf("token for an unknown user: %v", err)
	}
}

func TestRoleDeleteTakesTheRoleFromUsers(t *testing.T) {
	s, db, _ := enabledStore(t)
	root := Info{Username: "root", Revision: s.Revision()}
	apply(t, s, db, root, &pb.InternalRaftRequest{AuthRoleDelete: &pb.AuthRoleDeleteRequest{Role: "reader"}})
	u, _ := db.Get(store.BucketAuthUsers, []byte("alice"))
	user, err := UnmarshalAuthUser(u)
	if err != nil || len(user.Roles) != 0 {
		t.Fatalf("alice after deleting her role: %v %v", user, err)
	}
	if _, ok := db.Get(store.BucketAuthRoles, []byte("reader")); ok {
		t.Error("role reader still stored")
	}
	// A reload sees what was written.
	s2 := New(Config{Hasher: fastHasher})
	if err := s2.Load(db); err != nil || !s2.Enabled() || s2.Revision() != s.Revision() {
		t.Fatalf("reload: enabled %v revision %d (want %d) %v", s2.Enabled(), s2.Revision(), s.Revision(), err)
	}
}
