package etcdref

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Start runs a fresh single-member reference etcd on the given client and
// peer URLs with more flags, killed at the end of the test, and returns
// curl once it is healthy; it skips the test when the reference binaries
// cannot be had.
func Start(t testing.TB, curl, purl string, args ...string) string {
	t.Helper()
	bin := Bin(t, "etcd")
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
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited; logf.Close() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(curl + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return curl
			}
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("reference etcd exited before it was healthy; log:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("reference etcd did not become healthy; see %s", logf.Name())
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, not waiting for time to pass
	}
}
