// Package etcdref finds the reference etcd binaries (etcd, etcdctl,
// etcdutl) that tests use as black boxes to compare cairn with: etcd 3.7.3,
// and other releases where a test needs one (etcd 3.6 after a downgrade).
// They are built from the Go module proxy, once, by the repository's
// scripts/reference-etcd.sh (found by walking up from the test's working
// directory to go.mod), which caches them. CAIRN_REFERENCE_ETCD_DIR names a
// folder that already holds etcd 3.7.3's binaries instead.
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

// Version is the release cairn is compared with.
const Version = "v3.7.3"

var (
	mu    sync.Mutex
	found = map[string]result{} // by release
)

type result struct {
	dir string
	err error
}

// Dir returns the folder holding etcd, etcdctl and etcdutl 3.7.3. It runs
// the build script once per process (the script itself caches the
// binaries). CAIRN_REFERENCE_ETCD_DIR overrides the lookup.
func Dir() (string, error) {
	if d := os.Getenv("CAIRN_REFERENCE_ETCD_DIR"); d != "" {
		return d, nil
	}
	return ReleaseDir(Version)
}

// ReleaseDir is Dir for any release ("v3.6.16").
func ReleaseDir(release string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if r, ok := found[release]; ok {
		return r.dir, r.err
	}
	dir, err := build(release)
	found[release] = result{dir, err}
	return dir, err
}

func build(release string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "scripts", "reference-etcd.sh")
	if _, err := os.Stat(script); err != nil {
		return "", fmt.Errorf("reference etcd build script not found: %w", err)
	}
	cmd := exec.Command("bash", script)
	for _, kv := range os.Environ() {
		// A folder chosen for the default release must not serve another.
		if release == Version || !strings.HasPrefix(kv, "ETCD_REF_DIR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "ETCD_REF_VERSION="+release)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build reference etcd %s with %s: %w", release, script, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Bin returns the path of one reference binary of etcd 3.7.3, or skips the
// test with the reason when the reference tools cannot be built here.
func Bin(t testing.TB, name string) string {
	t.Helper()
	d, err := Dir()
	return binIn(t, d, err, name)
}

// ReleaseBin is Bin for any release ("v3.6.16").
func ReleaseBin(t testing.TB, release, name string) string {
	t.Helper()
	d, err := ReleaseDir(release)
	return binIn(t, d, err, name)
}

func binIn(t testing.TB, d string, err error, name string) string {
	t.Helper()
	if err != nil {
		t.Skipf("reference etcd tools unavailable, skipping the comparison with real etcd "+
			"(scripts/reference-etcd.sh builds them; CAIRN_REFERENCE_ETCD_DIR names a folder that holds them): %v", err)
	}
	p := filepath.Join(d, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference %s missing in %s (from CAIRN_REFERENCE_ETCD_DIR or scripts/reference-etcd.sh), skipping the comparison with real etcd", name, d)
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
