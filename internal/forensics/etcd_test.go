package forensics

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/testnet"
	"github.com/cairnkv/cairn/pkg/store"
)

// Helpers that run the reference etcd 3.7.3 on a data directory.

// etcdMember is a reference etcd started by startEtcd.
type etcdMember struct {
	endpoint string
	mu       sync.Mutex
	log      bytes.Buffer
}

func (m *etcdMember) logText() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.log.String()
}

// etcdReadyLine is what etcd logs once its client listener serves.
const etcdReadyLine = "serving client traffic insecurely"

// startEtcd starts the reference etcd as the single member name of a
// cluster on dataDir, with peerURL as its peer URL, and waits until it
// serves clients (it says so in its log). It is killed at the end of the
// test.
func startEtcd(t *testing.T, dataDir, name, peerURL, token string) *etcdMember {
	t.Helper()
	bin := etcdref.Bin(t, "etcd")
	client := testnet.FreeURL(t)
	m := &etcdMember{endpoint: client}
	cmd := exec.Command(bin, "--name", name, "--data-dir", dataDir,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--initial-cluster", name+"="+peerURL, "--initial-cluster-token", token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			m.mu.Lock()
			m.log.WriteString(sc.Text() + "\n")
			m.mu.Unlock()
			if strings.Contains(sc.Text(), etcdReadyLine) {
				once.Do(func() { close(ready) })
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		cmd.Wait()
	})
	select {
	case <-ready:
	case <-exited:
		t.Fatalf("etcd exited before serving:\n%s", m.logText())
	case <-time.After(60 * time.Second):
		t.Fatalf("etcd did not serve within 60s:\n%s", m.logText())
	}
	return m
}

// etcdctl runs the reference etcdctl against m.
func (m *etcdMember) etcdctl(t *testing.T, args ...string) string {
	t.Helper()
	bin := etcdref.Bin(t, "etcdctl")
	out, err := exec.Command(bin, append([]string{"--endpoints", m.endpoint}, args...)...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("etcdctl %v: %v\n%s\netcd log:\n%s", args, err, stderr, m.logText())
	}
	return string(out)
}

// disableAuth turns auth off in the db at path. The fixture has auth on
// and its root password is not known, so the tests that read its keys
// back through a server turn it off first; restore does not touch the auth
// buckets.
func disableAuth(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(store.BucketAuth).Put(store.AuthEnabledKey, []byte{0})
	})
	if err != nil {
		t.Fatal(err)
	}
}
