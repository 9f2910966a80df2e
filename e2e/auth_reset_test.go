package e2e

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/internal/authtest"
)

// The etcd 3.7.3 fixture has authentication on and passwords nobody knows:
// the tests that read all of it give its root user a known password in
// their copy first, offline, and read as root.
const rootPassword = "rootpw"

// resetRootPassword sets root's password in the db of a stopped data dir,
// leaving the rest of the auth state as etcd wrote it.
func resetRootPassword(t *testing.T, dataDir string) {
	t.Helper()
	authtest.SetPasswordsOffline(t, dataDir, map[string]string{auth.RootUser: rootPassword})
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
