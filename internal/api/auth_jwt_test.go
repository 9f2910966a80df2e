package api

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/cairnkv/cairn/internal/auth/jwtkeytest"
	"github.com/cairnkv/cairn/internal/memberconfig"
)

// TestAuthWithJWT: a member with --auth-token jwt issues JWTs and takes
// them with etcd's "Bearer " prefix too; a change of the auth state makes
// them old, and a clientv3 client then logs in again; a JWT ends at its
// exp however much it is used.
func TestAuthWithJWT(t *testing.T) {
	// exp is in whole seconds: a 3s token lives more than 2s, long enough
	// for the checks before it expires.
	option := jwtkeytest.New(t, "ES256").Option(t, t.TempDir(), "ES256") + ",ttl=3s"
	m := newMember(t, memberconfig.Config{AuthToken: option})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	setUpAuth(t, ctx, m.client("", ""))
	root, alice, conn := m.client("root", "rootpw"), m.client("alice", "alicepw"), m.conn()

	tok := authenticate(t, ctx, conn, "alice", "alicepw")
	for _, sent := range []string{tok, "Bearer " + tok} {
		if err := rawRange(ctx, conn, sent, "/app/x"); err != nil {
			t.Errorf("a fresh JWT sent as %.10q...: %v", sent, err)
		}
	}
	if _, err := root.RoleAdd(ctx, "another"); err != nil {
		t.Fatal(err)
	}
	if err := rawRange(ctx, conn, tok, "/app/x"); !errors.Is(err, rpctypes.ErrGRPCAuthOldRevision) {
		t.Errorf("a JWT from before a change of the auth state: %v", err)
	}
	if _, err := alice.Get(ctx, "/app/x"); err != nil {
		t.Errorf("alice's client after the auth state changed: %v", err)
	}

	tok = authenticate(t, ctx, conn, "alice", "alicepw")
	for deadline := time.Now().Add(10 * time.Second); !errors.Is(rawRange(ctx, conn, tok, "/app/x"), rpctypes.ErrGRPCInvalidAuthToken); {
		if time.Now().After(deadline) {
			t.Fatal("a 3s JWT still works after 10s")
		}
		time.Sleep(100 * time.Millisecond) // polling a condition, not waiting for time to pass
	}
}
