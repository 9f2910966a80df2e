package robustness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/e2e/robustness/peerproxy"
	"github.com/cairnkv/cairn/internal/faultfs"
	"github.com/cairnkv/cairn/internal/testnet"
)

// Timing of the members, the same for both servers: fast elections, so that
// a run of 25 s sees several.
const (
	heartbeatMS = "50"
	electionMS  = "500"
)

// member is one server process, started and restarted on the same flags.
type member struct {
	name      string
	clientURL string // http://127.0.0.1:port
	peerURL   string // advertised: the proxy's
	dataDir   string
	logPath   string
	argv      []string    // the whole command line
	disk      *faultfs.FS // the mount that dataDir is on, when the run has disk faults

	mu       sync.Mutex
	env      []string // added to the environment of the next start
	logStart int64    // the log's size when the current process started
	cmd      *exec.Cmd
	exited   chan struct{}
	paused   bool
	stopping bool     // the suite is ending the process
	crashes  []string // exits the suite did not cause
}

// cluster is three members, each behind a peer proxy of the network's.
type cluster struct {
	server string // "cairn" or "etcd"
	dir    string
	net    *peerproxy.Network
	disks  bool // each member's data dir is on its own faultfs mount

	argv []string // the command line of a member before its flags
	t    testing.TB
	// onReplace is called after a membership change replaced old by nw
	// (set before the faults begin, under mu).
	onReplace func(old, nw *member)
	// compactor compacts when a fault asks (set before the faults begin,
	// under mu).
	compactor *compactor

	mu      sync.Mutex
	members []*member // the current members; a membership change replaces one
	all     []*member // every member ever started, for the logs and the cleanup
}

// list returns the current members.
func (c *cluster) list() []*member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.members)
}

// everyone returns every member ever started.
func (c *cluster) everyone() []*member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.all)
}

// startCluster starts three members of server (the command line before the
// flags), each with its data dir on its own faultfs mount if disks is set,
// and waits until each answers a linearizable read; everything is killed
// (and unmounted) at the end of the test.
func startCluster(t *testing.T, kind string, server []string, dir string, disks bool) (*cluster, error) {
	c := &cluster{server: kind, dir: dir, net: peerproxy.New(), argv: server, t: t, disks: disks}
	t.Cleanup(c.stop)
	var initial []string
	for i := 1; i <= 3; i++ {
		m, err := c.newMember(fmt.Sprintf("m%d", i))
		if err != nil {
			return c, err
		}
		initial = append(initial, m.name+"="+m.peerURL)
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		m.argv = append(m.argv, "--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new")
		if err := m.start(); err != nil {
			return c, err
		}
	}
	if bad := c.waitHealthy(30*time.Second, c.list()...); len(bad) > 0 {
		return c, fmt.Errorf("members %v not healthy within 30 s of the start", bad)
	}
	if err := c.learnIDs(); err != nil {
		return c, err
	}
	return c, nil
}

// newMember lays out a member, its proxy and its flags but for
// --initial-cluster and --initial-cluster-state.
func (c *cluster) newMember(name string) (*member, error) {
	m := &member{name: name, dataDir: filepath.Join(c.dir, name+".data"),
		logPath: filepath.Join(c.dir, name+".log"), clientURL: testnet.FreeURL(c.t)}
	if c.disks {
		if err := m.mountDisk(c.dir); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	c.all = append(c.all, m) // from here on, c.stop unmounts its disk
	c.mu.Unlock()
	listen := testnet.FreeAddr(c.t)
	p, err := c.net.Listen(m.name, listen)
	if err != nil {
		return nil, err
	}
	m.peerURL = "http://" + p.Addr
	m.argv = append(slices.Clone(c.argv),
		"--name", m.name, "--data-dir", m.dataDir,
		"--listen-client-urls", m.clientURL, "--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", "http://"+listen, "--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster-token", "robustness-"+filepath.Base(c.dir),
		"--heartbeat-interval", heartbeatMS, "--election-timeout", electionMS)
	return m, nil
}

// learnIDs tells the network which member ID belongs to which member.
func (c *cluster) learnIDs() error {
	cli, err := c.client(c.list()[0])
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("member list: %w", err)
	}
	ids := map[string]string{}
	for _, pm := range resp.Members {
		for _, m := range c.list() {
			for _, u := range pm.PeerURLs {
				if u == m.peerURL {
					ids[fmt.Sprintf("%x", pm.ID)] = m.name
				}
			}
		}
	}
	if len(ids) != len(c.list()) {
		return fmt.Errorf("member list %v does not name every member", resp.Members)
	}
	c.net.SetNames(ids)
	return nil
}

func (m *member) endpoint() string { return strings.TrimPrefix(m.clientURL, "http://") }

// start runs the member; its output goes to its log, appended across restarts.
func (m *member) start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil && !isClosed(m.exited) {
		return fmt.Errorf("%s is already running", m.name)
	}
	logf, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== robustness: start %s at %s%s\n", m.name, time.Now().UTC().Format(time.RFC3339Nano), prefixed(" with ", strings.Join(m.env, " ")))
	if m.logStart, err = logf.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	cmd := exec.Command(m.argv[0], m.argv[1:]...)
	cmd.Env = append(os.Environ(), m.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", m.name, err)
	}
	exited := make(chan struct{})
	logStart := m.logStart
	go func() {
		err := cmd.Wait()
		m.mu.Lock()
		if m.cmd == cmd && !m.stopping {
			m.crashes = append(m.crashes, fmt.Sprintf("%s exited by itself at %s: %v; its last words: %s", m.name,
				time.Now().UTC().Format(time.RFC3339Nano), err, lastLogLine(m.logPath, logStart)))
		}
		m.mu.Unlock()
		close(exited)
	}()
	m.cmd, m.exited, m.paused = cmd, exited, false
	return nil
}

// lastLogLine is the last line a process wrote to the log at path after
// offset from, cut to a length that fits a report.
func lastLogLine(path string, from int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b[min(from, int64(len(b))):])), "\n")
	if last := lines[len(lines)-1]; last != "" {
		return last[:min(len(last), 400)]
	}
	return "(nothing)"
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// exitedCh is closed when the current process exits (nil: none runs).
func (m *member) exitedCh() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return nil
	}
	return m.exited
}

// setEnv sets what the next start adds to the environment.
func (m *member) setEnv(env ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.env = env
}

// logSinceStart returns what the current (or last) process wrote to the log.
func (m *member) logSinceStart() (string, error) {
	m.mu.Lock()
	from := m.logStart
	m.mu.Unlock()
	f, err := os.Open(m.logPath)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, from, 1<<40))
	return string(b), err
}

// expectExit takes back the record of the member's last exit as a crash
// if the process had written want to its log: an exit the suite caused
// through a crash point. It reports whether it did.
func (m *member) expectExit(want string) bool {
	log, err := m.logSinceStart()
	if err != nil || !strings.Contains(log, want) {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.crashes) == 0 {
		return false
	}
	m.crashes = m.crashes[:len(m.crashes)-1]
	return true
}

// crashed lists the exits of the member that the suite did not cause.
func (m *member) crashed() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.crashes...)
}

// signal sends sig to the running member (false if it is not running).
func (m *member) signal(sig syscall.Signal) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	switch sig {
	case syscall.SIGSTOP:
		m.paused = true
	case syscall.SIGCONT:
		m.paused = false
	}
	return m.cmd.Process.Signal(sig) == nil
}

// stopWith sends sig (after SIGCONT if the member is paused) and waits up to
// timeout for the process to exit; on timeout it asks for a goroutine dump
// (SIGQUIT, into the log), kills it and returns an error.
func (m *member) stopWith(sig syscall.Signal, timeout time.Duration) error {
	m.mu.Lock()
	cmd, exited, paused := m.cmd, m.exited, m.paused
	m.stopping = true
	m.mu.Unlock()
	if cmd == nil {
		m.mu.Lock()
		m.stopping = false
		m.mu.Unlock()
		return nil
	}
	if paused {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	_ = cmd.Process.Signal(sig)
	var err error
	select {
	case <-exited:
	case <-time.After(timeout):
		err = fmt.Errorf("%s did not exit %v after %v; goroutine dump (SIGQUIT) in %s", m.name, timeout, sig, m.logPath)
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(2 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	m.mu.Lock()
	m.cmd, m.paused, m.stopping = nil, false, false
	m.mu.Unlock()
	return err
}

// kill ends the member with SIGKILL.
func (m *member) kill() { _ = m.stopWith(syscall.SIGKILL, 10*time.Second) }

func (m *member) running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd != nil && !isClosed(m.exited)
}

// dump asks a running member for a goroutine dump (Go servers print one on
// SIGQUIT and exit); it is restarted afterwards so the run can go on.
func (m *member) dump() {
	if m.running() {
		_ = m.stopWith(syscall.SIGQUIT, 5*time.Second)
		_ = m.start()
	}
}

// stop kills every member, closes the proxies and unmounts the members'
// disks.
func (c *cluster) stop() {
	for _, m := range c.everyone() {
		m.kill()
	}
	c.net.Close()
	for _, m := range c.everyone() {
		if m.disk != nil {
			if err := m.disk.Unmount(); err != nil {
				c.t.Logf("%s's disk: %v", m.name, err)
			}
		}
	}
}

// client returns a client pinned to the given members.
func (c *cluster) client(ms ...*member) (*clientv3.Client, error) {
	var eps []string
	for _, m := range ms {
		eps = append(eps, m.endpoint())
	}
	return clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second,
		DialKeepAliveTime: 2 * time.Second, DialKeepAliveTimeout: 2 * time.Second, Logger: quietLogger()})
}

// healthy reports whether m answers a linearizable read and knows a leader.
func (c *cluster) healthy(cli *clientv3.Client, m *member) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := cli.Get(ctx, "health-probe"); err != nil {
		return fmt.Errorf("linearizable get: %w", err)
	}
	st, err := cli.Status(ctx, m.endpoint())
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if st.Leader == 0 {
		return errors.New("no leader")
	}
	return nil
}

// waitHealthy polls the members until each is healthy or the time is up, and
// returns the names of those that were not, with why.
func (c *cluster) waitHealthy(timeout time.Duration, ms ...*member) []string {
	deadline := time.Now().Add(timeout)
	var mu sync.Mutex
	var bad []string
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() {
			cli, err := c.client(m)
			if err != nil {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("%s (%v)", m.name, err))
				mu.Unlock()
				return
			}
			defer cli.Close()
			for {
				err := c.healthy(cli, m)
				if err == nil {
					return
				}
				if !m.running() {
					err = fmt.Errorf("not running: %v", m.crashed())
				}
				if time.Now().After(deadline) || !m.running() {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("%s (%v)", m.name, err))
					mu.Unlock()
					return
				}
				time.Sleep(100 * time.Millisecond) // polling a condition
			}
		})
	}
	wg.Wait()
	return bad
}

// leader returns the member that the members say is the leader, or nil,
// and the highest raft term they answer with.
func (c *cluster) leader() (lead *member, term uint64) {
	cli, err := c.client(c.list()...)
	if err != nil {
		return nil, 0
	}
	defer cli.Close()
	for _, m := range c.list() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, m.endpoint())
		cancel()
		if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId && lead == nil {
			lead = m
		}
		if err == nil {
			term = max(term, st.RaftTerm)
		}
	}
	return lead, term
}
