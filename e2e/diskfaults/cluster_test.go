//go:build linux

package diskfaults

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/faultfs"
	"github.com/cairnkv/cairn/internal/testnet"
)

// cairnBin is the cairn binary the tests run, built once.
var cairnBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cairn-diskfaults-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cairnBin = filepath.Join(dir, "cairn")
	build := exec.Command("go", "build", "-o", cairnBin, "../../cmd/cairn")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build cairn:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binaries returns the servers the tests run: cairn, and etcd 3.7.3 as
// the control where its reference binary is at hand.
func binaries(t *testing.T) map[string]func(*testing.T) string {
	return map[string]func(*testing.T) string{
		"cairn": func(*testing.T) string { return cairnBin },
		"etcd":  func(t *testing.T) string { return etcdref.Bin(t, "etcd") },
	}
}

// member is one server process; all its runs log to one file.
type member struct {
	name, dataDir, curl, purl, logPath string
	args                               []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// cluster is three members whose data dirs are on faultfs: all on one
// mount (fs), or each on its own (mounts, by member).
type cluster struct {
	t       *testing.T
	bin     string
	fs      *faultfs.FS
	mounts  []*faultfs.FS
	members []*member
}

// startCluster starts three members of bin with their data dirs on a
// fresh faultfs mount, and waits until each answers.
func startCluster(t *testing.T, bin string) *cluster { return startClusterOn(t, bin, 1) }

// startClusterOn is startCluster with the data dirs spread over n fresh
// mounts (1 or 3): member i's on c.mounts[i%n], and extra flags for each.
func startClusterOn(t *testing.T, bin string, n int, extra ...string) *cluster {
	t.Helper()
	dir := t.TempDir()
	c := &cluster{t: t, bin: bin}
	for i := range n {
		backing, mnt := filepath.Join(dir, fmt.Sprintf("backing%d", i)), filepath.Join(dir, fmt.Sprintf("mnt%d", i))
		for _, d := range []string{backing, mnt} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		c.mounts = append(c.mounts, faultfs.MountT(t, backing, mnt))
	}
	c.fs = c.mounts[0]
	var initial []string
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("m%d", i)
		m := &member{name: name, dataDir: filepath.Join(c.mounts[(i-1)%n].Dir, name), logPath: filepath.Join(dir, name+".log"),
			curl: testnet.FreeURL(t), purl: testnet.FreeURL(t)}
		c.members = append(c.members, m)
		initial = append(initial, name+"="+m.purl)
	}
	for _, m := range c.members {
		m.args = []string{"--name", m.name, "--data-dir", m.dataDir,
			"--listen-client-urls", m.curl, "--advertise-client-urls", m.curl,
			"--listen-peer-urls", m.purl, "--initial-advertise-peer-urls", m.purl,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new"}
		m.args = append(m.args, extra...)
	}
	t.Cleanup(func() {
		for _, m := range c.members {
			m.kill()
		}
		if t.Failed() {
			for _, m := range c.members {
				b, _ := os.ReadFile(m.logPath)
				if len(b) > 6000 {
					b = b[len(b)-6000:]
				}
				t.Logf("--- end of %s's log:\n%s", m.name, b)
			}
		}
	})
	for _, m := range c.members {
		c.start(m)
	}
	for _, m := range c.members {
		c.waitUp(m, 30*time.Second)
	}
	return c
}

// start runs the member (again).
func (c *cluster) start(m *member) {
	c.t.Helper()
	logf, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	args := m.args
	if filepath.Base(c.bin) == "cairn" {
		args = append([]string{"serve"}, args...)
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		c.t.Fatalf("start %s: %v", m.name, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(exited)
	}()
	m.mu.Lock()
	m.cmd, m.exited = cmd, exited
	m.mu.Unlock()
}

// kill ends the member's process with SIGKILL, if it runs, and waits.
func (m *member) kill() {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// exitedc returns a channel closed when the member's current run ends.
func (m *member) exitedc() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.exited
}

// waitUp waits until the member serves a linearizable read.
func (c *cluster) waitUp(m *member, within time.Duration) {
	c.t.Helper()
	cli := c.client(m)
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "health")
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s not serving after %v: %v", m.name, within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// client returns a client of the member alone, closed at the test's end.
func (c *cluster) client(m *member) *clientv3.Client {
	c.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.curl}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

// leader returns the member that the members agree leads.
func (c *cluster) leader() *member {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ids := map[uint64]*member{}
		leads := map[uint64]int{}
		for _, m := range c.members {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := c.client(m).Status(ctx, m.curl)
			cancel()
			if err == nil {
				ids[st.Header.MemberId] = m
				leads[st.Leader]++
			}
		}
		for id, n := range leads {
			if n == len(c.members) && ids[id] != nil {
				return ids[id]
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the members do not agree on a leader: %v", leads)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// onMember limits faults to one member's data dir.
func (c *cluster) onMember(m *member) func(string) bool {
	return func(p string) bool { return strings.HasPrefix(p, m.name+"/") }
}

// logLine returns the first line of the member's log that holds s, or "".
func (m *member) logLine(s string) string {
	b, _ := os.ReadFile(m.logPath)
	for _, line := range bytes.Split(b, []byte("\n")) {
		if bytes.Contains(line, []byte(s)) {
			return string(line)
		}
	}
	return ""
}
