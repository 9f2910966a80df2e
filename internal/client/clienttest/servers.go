package clienttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cairnkv/cairn/internal/etcdref"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// CairnBinary builds cmd/cairn once per test process and returns its path;
// RemoveBuilds deletes it when the process's tests are done.
func CairnBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "cairn-test-bin-")
		if buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(buildDir, "cairn"), "github.com/cairnkv/cairn/cmd/cairn").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "cairn")
}

// RemoveBuilds deletes what CairnBinary built; a TestMain calls it after
// the tests have run.
func RemoveBuilds() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// Server is a server under test: a name for subtests and the command line
// that starts a member, before its flags.
type Server struct {
	Name    string
	Command []string
}

// Servers are the servers a test that must hold for both runs against:
// etcd 3.7.3 and cairn serve, or only the one CAIRN_TEST_SERVER names.
func Servers(t testing.TB) []Server {
	t.Helper()
	if os.Getenv(ServerEnv) != "" {
		return []Server{{Name: "selected", Command: ServerCommand(t)}}
	}
	return []Server{
		{Name: "etcd", Command: []string{etcdref.Bin(t, "etcd")}},
		{Name: "cairn-serve", Command: []string{CairnBinary(t), "serve"}},
	}
}
