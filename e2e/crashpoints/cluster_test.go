//go:build failpoints

package crashpoints

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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

	"github.com/cairnkv/cairn/internal/cliutil/metrics"
	"github.com/cairnkv/cairn/internal/testnet"
	"github.com/cairnkv/cairn/pkg/failpoint"
)

// cairnBin is the failpoints build of cairn the tests run.
var cairnBin string

// TestMain builds cairn with the failpoints tag (with the race detector
// when CAIRN_CRASHPOINTS_RACE=1), unless CAIRN_FAILPOINTS_BIN names such a
// build already.
func TestMain(m *testing.M) {
	if bin := os.Getenv("CAIRN_FAILPOINTS_BIN"); bin != "" {
		cairnBin = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "cairn-crashpoints-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cairnBin = filepath.Join(dir, "cairn")
	args := []string{"build", "-tags", "failpoints", "-o", cairnBin}
	if os.Getenv("CAIRN_CRASHPOINTS_RACE") == "1" {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "../../cmd/cairn")...)
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

// Flags every member gets: fast elections, and snapshots often enough that a
// member down for a second must catch up from a snapshot.
const (
	snapshotCount  = 100
	catchUpEntries = 20
)

// member is one `cairn serve` process, started again and again on the same
// flags and data directory. All its runs log to one file, each run after a
// "=== crashpoints:" line.
type member struct {
	name    string
	dataDir string
	curl    string
	purl    string
	logPath string
	args    []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	state  *os.ProcessState
	runs   int
	logOff int64 // where the current run's lines begin in the log
}

type cluster struct {
	t       *testing.T
	dir     string
	members []*member
}

// startCluster starts three members under dir and waits until each is
// healthy; the test's cleanup kills whatever still runs.
func startCluster(t *testing.T, dir string) *cluster {
	t.Helper()
	c := &cluster{t: t, dir: dir}
	var initial []string
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("m%d", i)
		m := &member{name: name, dataDir: filepath.Join(dir, name+".data"), logPath: filepath.Join(dir, name+".log"),
			curl: testnet.FreeURL(t), purl: testnet.FreeURL(t)}
		c.members = append(c.members, m)
		initial = append(initial, name+"="+m.purl)
	}
	for _, m := range c.members {
		m.args = []string{"serve", "--name", m.name, "--data-dir", m.dataDir,
			"--listen-client-urls", m.curl, "--advertise-client-urls", m.curl,
			"--listen-peer-urls", m.purl, "--initial-advertise-peer-urls", m.purl,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--heartbeat-interval", "50", "--election-timeout", "500",
			"--snapshot-count", fmt.Sprint(snapshotCount), "--snapshot-catchup-entries", fmt.Sprint(catchUpEntries)}
	}
	t.Cleanup(func() {
		for _, m := range c.members {
			m.kill()
		}
	})
	for _, m := range c.members {
		if err := m.start(""); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range c.members {
		if err := m.waitHealthy(60 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// start runs the member; failpoints, when not empty, is its CAIRN_FAILPOINTS.
func (m *member) start(failpoints string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil && m.state == nil {
		return fmt.Errorf("%s: started while running", m.name)
	}
	logf, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	off, err := logf.Seek(0, io.SeekEnd)
	if err != nil {
		logf.Close()
		return err
	}
	m.runs++
	fmt.Fprintf(logf, "=== crashpoints: run %d of %s at %s, %s=%q\n", m.runs, m.name, time.Now().UTC().Format(time.RFC3339Nano), failpoint.EnvVar, failpoints)
	cmd := exec.Command(cairnBin, m.args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, failpoint.EnvVar+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if failpoints != "" {
		cmd.Env = append(cmd.Env, failpoint.EnvVar+"="+failpoints)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", m.name, err)
	}
	exited := make(chan struct{})
	m.cmd, m.exited, m.state, m.logOff = cmd, exited, nil, off
	go func() {
		cmd.Wait()
		logf.Close()
		m.mu.Lock()
		m.state = cmd.ProcessState
		m.mu.Unlock()
		close(exited)
	}()
	return nil
}

func (m *member) current() (*exec.Cmd, chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd, m.exited
}

// kill ends the process with SIGKILL and waits for it.
func (m *member) kill() {
	cmd, exited := m.current()
	if cmd == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// stop ends the process with SIGTERM and waits for a clean exit.
func (m *member) stop() error {
	cmd, exited := m.current()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		m.kill()
		return fmt.Errorf("%s did not stop within 20s of SIGTERM", m.name)
	}
	if st := m.exitState(); !st.Success() {
		return fmt.Errorf("%s exited with %v after SIGTERM", m.name, st)
	}
	return nil
}

func (m *member) exitState() *os.ProcessState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// waitExit waits until the running process ends.
func (m *member) waitExit(timeout time.Duration) (*os.ProcessState, error) {
	_, exited := m.current()
	select {
	case <-exited:
		return m.exitState(), nil
	case <-time.After(timeout):
		return nil, fmt.Errorf("%s still running after %v", m.name, timeout)
	}
}

// runLog returns what the member's current (or last) run has logged.
func (m *member) runLog() string {
	m.mu.Lock()
	off := m.logOff
	m.mu.Unlock()
	b, err := os.ReadFile(m.logPath)
	if err != nil || int64(len(b)) < off {
		return ""
	}
	return string(b[off:])
}

// tail returns the last n lines of the member's whole log.
func (m *member) tail(n int) string {
	f, err := os.Open(m.logPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// waitHealthy polls /health until it answers 200 (the member has a leader
// and no alarm), or the process exits.
func (m *member) waitHealthy(timeout time.Duration) error {
	_, exited := m.current()
	hc := &http.Client{Timeout: time.Second}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := hc.Get(m.curl + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited (%v) before it was healthy; its log ends:\n%s", m.name, m.exitState(), m.tail(40))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy within %v; its log ends:\n%s", m.name, timeout, m.tail(40))
		}
		time.Sleep(50 * time.Millisecond) // polling a condition
	}
}

// client returns a client of this member alone; the caller closes it.
func (m *member) client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{m.curl}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

// status asks the member for its status.
func (m *member) status() (*clientv3.StatusResponse, error) {
	cli, err := m.client()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return cli.Status(ctx, m.curl)
}

// isLeader asks the member whether it leads.
func (m *member) isLeader() (bool, error) {
	st, err := m.status()
	if err != nil {
		return false, err
	}
	return st.Leader == st.Header.MemberId, nil
}

// roles returns the leader and the followers, as the members see it.
func (c *cluster) roles() (leader *member, followers []*member, err error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		leader, followers = nil, nil
		for _, m := range c.members {
			ok, err := m.isLeader()
			switch {
			case err != nil:
			case ok:
				leader = m
			default:
				followers = append(followers, m)
			}
		}
		if leader != nil && len(followers) == len(c.members)-1 {
			return leader, followers, nil
		}
		if time.Now().After(deadline) {
			return nil, nil, errors.New("no leader with two followers within 30s")
		}
		time.Sleep(50 * time.Millisecond) // polling a condition
	}
}

func (c *cluster) endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.curl)
	}
	return eps
}

// moveLeaderAwayFrom makes a member other than v, which is down, leader in
// place of the current one.
func (c *cluster) moveLeaderAwayFrom(v *member) error {
	var others []*member
	for _, m := range c.members {
		if m != v {
			others = append(others, m)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		for i, m := range others {
			cli, err := m.client()
			if err != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			st, err := cli.Status(ctx, m.curl)
			if err == nil && st.Leader == st.Header.MemberId {
				to := others[1-i]
				var tst *clientv3.StatusResponse
				if tst, err = cli.Status(ctx, to.curl); err == nil {
					_, err = cli.MoveLeader(ctx, tst.Header.MemberId)
				}
				if err == nil {
					cancel()
					cli.Close()
					return to.waitLeader(30 * time.Second)
				}
			}
			cancel()
			cli.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("could not move the leadership away from %s within 30s", v.name)
		}
		time.Sleep(100 * time.Millisecond) // polling a condition
	}
}

// waitLeader waits until m says it leads.
func (m *member) waitLeader(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if ok, err := m.isLeader(); err == nil && ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not leader within %v", m.name, timeout)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition
	}
}

// memberID asks the member for its ID.
func (m *member) memberID() (uint64, error) {
	st, err := m.status()
	if err != nil {
		return 0, err
	}
	return st.Header.MemberId, nil
}

// sendFailuresTo sums the messages the members other than v could not send
// to v, whose ID is id (etcd_network_peer_sent_failures_total).
func (c *cluster) sendFailuresTo(v *member, id uint64) (float64, error) {
	to := fmt.Sprintf("%x", id)
	var sum float64
	for _, m := range c.members {
		if m == v {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		samples, err := metrics.NewReader(m.curl, nil, 3*time.Second).Samples(ctx, "etcd_network_peer_sent_failures_total")
		cancel()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", m.name, err)
		}
		for _, s := range samples {
			if s.Labels["To"] == to {
				sum += s.Value
			}
		}
	}
	return sum, nil
}

// waitSendsFail waits until the other members' count of messages they
// could not send to v, which is down, has gone up twice since the call.
// The leader's transport keeps what it queues for a peer until a
// connection attempt takes it: the second failed attempt began after the
// call, so nothing queued before it (the appends of a burst) is delivered
// when v comes back, and v must catch up from what the leader holds now.
func (c *cluster) waitSendsFail(v *member, id uint64) error {
	last, err := c.sendFailuresTo(v, id)
	if err != nil {
		return err
	}
	rises := 0
	for deadline := time.Now().Add(30 * time.Second); rises < 2; time.Sleep(20 * time.Millisecond) { // polling a condition
		n, err := c.sendFailuresTo(v, id)
		if err != nil {
			return err
		}
		if n > last {
			rises, last = rises+1, n
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the members did not fail to send to %s twice within 30s", v.name)
		}
	}
	return nil
}
