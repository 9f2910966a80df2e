// Package etcdref finds the reference etcd 3.7.3 binaries (etcd, etcdctl,
// etcdutl) that tests use as black boxes to compare cairn with. They are
// built from the Go module proxy by shared/tools/reference-etcd.sh, which
// lives beside the repository.
package etcdref

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	once    sync.Once
	dir     string
	findErr error
)

// Dir returns the folder holding etcd, etcdctl and etcdutl. It runs the
// build script once per process (the script itself caches the binaries).
// CAIRN_REFERENCE_ETCD_DIR overrides the lookup.
func Dir() (string, error) {
	once.Do(func() {
		if d := os.Getenv("CAIRN_REFERENCE_ETCD_DIR"); d != "" {
			dir = d
			return
		}
		root, err := repoRoot()
		if err != nil {
			findErr = err
			return
		}
		script := filepath.Join(root, "..", "shared", "tools", "reference-etcd.sh")
		if _, err := os.Stat(script); err != nil {
			findErr = fmt.Errorf("reference etcd build script not found: %w", err)
			return
		}
		out, err := exec.Command("bash", script).Output()
		if err != nil {
			findErr = fmt.Errorf("build reference etcd with %s: %w", script, err)
			return
		}
		dir = strings.TrimSpace(string(out))
	})
	return dir, findErr
}

// Bin returns the path of one reference binary, or skips the test with the
// reason when the reference tools cannot be built here.
func Bin(t testing.TB, name string) string {
	t.Helper()
	d, err := Dir()
	if err != nil {
		t.Skipf("reference etcd tools unavailable, skipping the comparison with real etcd: %v", err)
	}
	p := filepath.Join(d, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference %s missing in %s, skipping the comparison with real etcd", name, d)
	}
	return p
}

// repoRoot walks up from the working directory to the folder with go.mod.
func repoRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		d = parent
	}
}
