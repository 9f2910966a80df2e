package api

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/authtest"
	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/testnet"
)

// TestServesEtcdFixtureWithAuth starts a member on a copy of the data dir
// etcd 3.7.3 wrote with authentication on (users root and alice, role
// reader reading the /app/ prefix, auth revision 7): the auth state comes
// from etcd's buckets and is enforced.
func TestServesEtcdFixtureWithAuth(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if out, err := exec.Command("cp", "-r", "../../testdata/etcd-3.7.3/data", dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the fixture: %v\n%s", err, out)
	}
	exec.Command("chmod", "-R", "u+w", dir).Run()

	// Before any password is changed: etcd's users are there, and a wrong
	// password is refused.
	m := &member{t: t, curl: testnet.FreeURL(t)}
	m.cfg = memberconfig.Config{Name: "default", DataDir: dir, ListenClientURLs: []string{m.curl},
		ListenPeerURLs: []string{testnet.FreeURL(t)}, BcryptCost: testBcryptCost}
	m.start()
	t.Cleanup(m.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	anon := m.client("", "")
	if _, err := anon.Get(ctx, "/app/config/3"); !errors.Is(err, rpctypes.ErrUserEmpty) {
		t.Errorf("anonymous read of etcd's data: %v", err)
	}
	if st, err := anon.AuthStatus(ctx); err != nil || !st.Enabled || st.AuthRevision != 7 {
		t.Errorf("auth status %v %v, etcd's is enabled at revision 7", st, err)
	}
	// (bcrypt at etcd's cost under the race detector on a busy machine
	// takes seconds.)
	if _, err := clientv3.New(clientv3.Config{Endpoints: []string{m.curl}, DialTimeout: 30 * time.Second, Username: "alice", Password: "wrong"}); !errors.Is(err, rpctypes.ErrAuthFailed) {
		t.Errorf("alice with a wrong password: %v", err)
	}
	anon.Close()
	m.stop()

	// The fixture's passwords are unknown: reset them on the copy, as an
	// operator would.
	authtest.SetPasswordsOffline(t, dir, map[string]string{"root": "rootpw", "alice": "alicepw"})
	m.start()
	alice := m.client("alice", "alicepw")
	if r, err := alice.Get(ctx, "/app/", clientv3.WithPrefix()); err != nil || len(r.Kvs) != 28 { // /app/config/3..30
		t.Errorf("alice reads /app/: %v %v", r, err)
	}
	for _, key := range []string{"foo", "greeting", "after-auth"} {
		if _, err := alice.Get(ctx, key); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Errorf("alice reads %s: %v", key, err)
		}
	}
	if _, err := alice.Put(ctx, "/app/config/3", "x"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("alice writes under /app/, which she may only read: %v", err)
	}
	root := m.client("root", "rootpw")
	users, err := root.UserList(ctx)
	if err != nil || !slices.Equal(users.Users, []string{"alice", "root"}) {
		t.Errorf("users %v %v", users, err)
	}
	roles, err := root.RoleList(ctx)
	if err != nil || !slices.Equal(roles.Roles, []string{"reader"}) {
		t.Errorf("roles %v %v", roles, err)
	}
	role, err := root.RoleGet(ctx, "reader")
	if err != nil || len(role.Perm) != 1 || string(role.Perm[0].Key) != "/app/" || string(role.Perm[0].RangeEnd) != "/app0" || role.Perm[0].PermType != clientv3.PermRead {
		t.Errorf("role reader %v %v", role, err)
	}
	if g, err := root.Get(ctx, "after-auth"); err != nil || len(g.Kvs) != 1 {
		t.Errorf("root reads after-auth: %v %v", g, err)
	}
}
