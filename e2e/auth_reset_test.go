package e2e

import (
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/pkg/store"
)

// The etcd 3.7.3 fixture has authentication on and passwords nobody knows:
// the tests that read all of it give its root user a known password in
// their copy first, offline, and read as root.
const rootPassword = "rootpw"

// resetRootPassword sets root's password in the db of a stopped data dir,
// leaving the rest of the auth state as etcd wrote it. The hash has the
// cheapest cost: each login checks it, slowly under the race detector.
func resetRootPassword(t *testing.T, dataDir string) {
	t.Helper()
	st, err := store.Open(store.Config{Backend: store.BackendConfig{Path: filepath.Join(dataDir, "member", "snap", "db")}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := st.Write()
	defer w.End()
	u, err := store.UnmarshalAuthUser(w.Backend().Get(store.BucketAuthUsers, []byte(auth.RootUser)))
	if err != nil {
		t.Fatalf("root user of the fixture: %v", err)
	}
	if u.Password, err = (auth.BcryptHasher{Cost: bcrypt.MinCost}).Hash(rootPassword); err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Backend().Put(store.BucketAuthUsers, []byte(auth.RootUser), b); err != nil {
		t.Fatal(err)
	}
}

// rootClient is a client of m logged in as root.
func rootClient(t *testing.T, m *member) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.curl}, DialTimeout: 5 * time.Second, Username: auth.RootUser, Password: rootPassword})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
