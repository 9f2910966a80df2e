package auth

import (
	"errors"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// TestStoreWithJWT: a JWT carries the auth revision it was issued at, so a
// change of the auth state makes it old (ErrAuthOldRevision) rather than
// invalid; and, as etcd's, it outlives its user and auth being off and on
// again, until it expires.
func TestStoreWithJWT(t *testing.T) {
	j, clock := newTestJWT(t, "ES256", "a")
	s, db := testStoreWith(t, j)
	enableAuth(t, s, db)
	if !s.SignsTokens() {
		t.Fatal("a JWT store does not sign tokens")
	}
	rev, err := s.CheckPassword("alice", "alicepw")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.SignToken("alice", rev)
	if err != nil {
		t.Fatal(err)
	}
	alice, ok := s.TokenInfo(tok)
	if !ok || alice != (Info{Username: "alice", Revision: rev}) {
		t.Fatalf("token info %+v %v", alice, ok)
	}
	if err := s.IsRangePermitted(alice, []byte("/app/x"), nil); err != nil {
		t.Errorf("alice reads /app/x: %v", err)
	}
	if err := s.CheckSameRevision(alice); err != nil {
		t.Errorf("same revision: %v", err)
	}

	root := Info{Username: "root", Revision: s.Revision()}
	apply(t, s, db, root, &pb.InternalRaftRequest{AuthRoleAdd: &pb.AuthRoleAddRequest{Name: "other"}})
	if got, ok := s.TokenInfo(tok); !ok || got != alice {
		t.Fatalf("after a change: %+v %v, want the token's own %+v", got, ok, alice)
	}
	if err := s.IsRangePermitted(alice, []byte("/app/x"), nil); !errors.Is(err, ErrAuthOldRevision) {
		t.Errorf("alice reads with an old token: %v", err)
	}
	if err := s.CheckSameRevision(alice); !errors.Is(err, ErrAuthOldRevision) {
		t.Errorf("same revision after a change: %v", err)
	}
	if err := s.CheckSameRevision(Info{Username: "alice", Revision: s.Revision() + 1}); !errors.Is(err, ErrAuthOldRevision) {
		t.Errorf("a revision from the future: %v", err)
	}

	root.Revision = s.Revision()
	apply(t, s, db, root, &pb.InternalRaftRequest{AuthUserDelete: &pb.AuthUserDeleteRequest{Name: "alice"}})
	if _, ok := s.TokenInfo(tok); !ok {
		t.Error("a deleted user's JWT no longer resolves; etcd's does (its revision is old)")
	}

	// An Authenticate entry in the log (proposed by a simple-token member)
	// gets a JWT at the revision of its place in the log.
	resp := apply(t, s, db, Info{}, &pb.InternalRaftRequest{Authenticate: &pb.InternalAuthenticateRequest{Name: "root"}})
	if info, ok := s.TokenInfo(resp.(*pb.AuthenticateResponse).Token); !ok || info != (Info{Username: "root", Revision: s.Revision()}) {
		t.Errorf("a JWT assigned at apply: %+v %v", info, ok)
	}

	apply(t, s, db, Info{Username: "root", Revision: s.Revision()}, &pb.InternalRaftRequest{AuthDisable: &pb.AuthDisableRequest{}})
	if _, ok := s.TokenInfo(tok); ok {
		t.Error("a token means something with auth off")
	}
	apply(t, s, db, Info{}, &pb.InternalRaftRequest{AuthEnable: &pb.AuthEnableRequest{}})
	if _, ok := s.TokenInfo(tok); !ok {
		t.Error("a JWT from before auth was off and on again no longer resolves; etcd's does")
	}
	clock.now = clock.now.Add(time.Minute)
	if _, ok := s.TokenInfo(tok); ok {
		t.Error("an expired JWT resolves")
	}
}
