package api

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/testnet"
	"github.com/cairnkv/cairn/pkg/etcdref"
)

// startReferenceEtcd starts a fresh single-member etcd 3.7.3, stopped at the
// end of the test, and returns its client URL; it skips the test when the
// reference binaries cannot be had.
func startReferenceEtcd(t *testing.T, args ...string) string {
	t.Helper()
	bin := etcdref.Bin(t, "etcd")
	curl := testnet.FreeURL(t)
	purl := testnet.FreeURL(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, append([]string{"--name", "m1", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", curl, "--advertise-client-urls", curl,
		"--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl, "--initial-cluster", "m1=" + purl}, args...)...)
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); logf.Close() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(curl + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return curl
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("reference etcd did not become healthy; see %s", logf.Name())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
