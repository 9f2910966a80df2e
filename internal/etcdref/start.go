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
	Run(t, Bin(t, "etcd"), "m1", filepath.Join(t.TempDir(), "data"), curl, purl, args...)
	return curl
}

// Run runs the etcd binary bin as the single member name of a cluster, its
// data in dataDir (new, or a copy of one to start on), on the given client
// and peer URLs with more flags, killed at the end of the test, and returns
// once it is healthy. Its log is in a file of the test's.
func Run(t testing.TB, bin, name, dataDir, curl, purl string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--name", name, "--data-dir", dataDir,
		"--listen-client-urls", curl, "--advertise-client-urls", curl,
		"--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl, "--initial-cluster", name + "=" + purl}, args...)...)
	logf, err := os.Create(filepath.Join(t.TempDir(), "etcd.log"))
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
				return
			}
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("%s exited before it was healthy on %s; log:\n%s", bin, dataDir, log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not become healthy on %s; see %s", bin, dataDir, logf.Name())
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, not waiting for time to pass
	}
}
