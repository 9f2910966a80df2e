// Package clienttest starts real servers for the tests of the client and the
// command line: etcd 3.7.3 built by scripts/reference-etcd.sh, or any
// server that takes etcd's flags (such as `cairn serve`) named by the
// CAIRN_TEST_SERVER environment variable.
package clienttest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/testnet"
	"github.com/cairnkv/cairn/internal/tlstest"
)

// ServerEnv names the environment variable that selects the server under
// test: a command line whose arguments are followed by etcd's member flags,
// for example "/usr/local/bin/cairn serve". Unset, the reference etcd is used.
const ServerEnv = "CAIRN_TEST_SERVER"

// startTimeout bounds how long a cluster may take to elect a leader.
const startTimeout = 30 * time.Second

// ServerCommand is the command line that starts a member, before its flags.
func ServerCommand(t testing.TB) []string {
	t.Helper()
	if cmd := strings.Fields(os.Getenv(ServerEnv)); len(cmd) > 0 {
		return cmd
	}
	return []string{etcdref.Bin(t, "etcd")}
}

// Options shape a test cluster.
type Options struct {
	// Size is the number of members; 0 means 1.
	Size int
	// PeerProxy routes peer traffic through proxies, so that a member can be
	// cut off from the others with Isolate.
	PeerProxy bool
	// ClientTLS, when set, makes members serve clients over TLS only, and
	// require client certificates signed by the same CA.
	ClientTLS *tlstest.Certificates
	// Args are extra flags for every member.
	Args []string
	// Server is the command line that starts a member, before its flags;
	// nil means ServerCommand's choice.
	Server []string
}

// Cluster is a running test cluster; it is stopped when the test ends.
type Cluster struct {
	Members []*Member
	t       testing.TB
	server  []string
	http    *http.Client // for health checks
}

// Member is one server process.
type Member struct {
	Name      string
	ClientURL string // http://127.0.0.1:port
	PeerURL   string // advertised: the proxy's when there is one
	DataDir   string

	args  []string
	log   string
	proxy *peerProxy

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// StartCluster starts a cluster and waits until it has a leader.
func StartCluster(t testing.TB, opts Options) *Cluster {
	t.Helper()
	server := opts.Server
	if len(server) == 0 {
		server = ServerCommand(t)
	}
	size := max(opts.Size, 1)
	dir := t.TempDir()
	c := &Cluster{t: t, server: server, http: &http.Client{Timeout: time.Second}}
	scheme := "http://"
	var tlsArgs []string
	if certs := opts.ClientTLS; certs != nil {
		scheme = "https://"
		tlsArgs = []string{"--cert-file", certs.ServerCert, "--key-file", certs.ServerKey,
			"--trusted-ca-file", certs.CAFile, "--client-cert-auth"}
		c.http.Transport = &http.Transport{TLSClientConfig: certs.ClientConfig(t)}
	}
	var initial []string
	for i := range size {
		m := &Member{Name: fmt.Sprintf("m%d", i+1), DataDir: filepath.Join(dir, fmt.Sprintf("m%d", i+1))}
		m.ClientURL = scheme + testnet.FreeAddr(t)
		listenPeer := "http://" + testnet.FreeAddr(t)
		m.PeerURL = listenPeer
		if opts.PeerProxy {
			m.proxy = startPeerProxy(t, strings.TrimPrefix(listenPeer, "http://"))
			m.PeerURL = "http://" + m.proxy.addr
		}
		m.log = filepath.Join(dir, m.Name+".log")
		m.args = append([]string{},
			"--name", m.Name, "--data-dir", m.DataDir,
			"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
			"--listen-peer-urls", listenPeer, "--initial-advertise-peer-urls", m.PeerURL,
			"--initial-cluster-token", filepath.Base(dir),
			"--heartbeat-interval", "50", "--election-timeout", "500",
			// Test passwords need no strength; the default cost is slow.
			"--bcrypt-cost", "4")
		m.args = append(m.args, tlsArgs...)
		m.args = append(m.args, opts.Args...)
		initial = append(initial, m.Name+"="+m.PeerURL)
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		m.args = append(m.args, "--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new")
		m.start(t, server)
	}
	t.Cleanup(func() {
		for _, m := range c.Members {
			m.Kill()
		}
		if t.Failed() {
			for _, m := range c.Members {
				logTail(t, m)
			}
		}
	})
	c.WaitHealthy(c.Members...)
	return c
}

func (m *Member) start(t testing.TB, server []string) {
	t.Helper()
	logFile, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(server[0], append(server[1:], m.args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", m.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	m.mu.Lock()
	m.cmd, m.done = cmd, done
	m.mu.Unlock()
}

// Endpoints returns the members' client addresses (host:port), as given to
// etcdctl's --endpoints.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, m.Endpoint())
	}
	return eps
}

// Endpoint is the member's client address, host:port.
func (m *Member) Endpoint() string {
	_, hostPort, _ := strings.Cut(m.ClientURL, "://")
	return hostPort
}

// Kill ends the member with SIGKILL and waits for it to exit.
func (m *Member) Kill() {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Reset replaces the cluster by a fresh one on the same addresses, with the
// same cluster token: its member and cluster IDs are the same, its data is
// new. Scripts run on two resets of one cluster see the same IDs.
func (c *Cluster) Reset() {
	c.t.Helper()
	for _, m := range c.Members {
		m.Kill()
		if err := os.RemoveAll(m.DataDir); err != nil {
			c.t.Fatal(err)
		}
		m.args = replaceFlag(m.args, "--initial-cluster-state", "new")
		m.start(c.t, c.server)
	}
	c.WaitHealthy(c.Members...)
}

// Restart starts a killed member again with its data directory.
func (c *Cluster) Restart(m *Member) {
	c.t.Helper()
	m.args = replaceFlag(m.args, "--initial-cluster-state", "existing")
	m.start(c.t, c.server)
}

func replaceFlag(args []string, flag, value string) []string {
	out := append([]string{}, args...)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == flag {
			out[i+1] = value
		}
	}
	return out
}

// Isolate cuts all peer traffic to and from m; the cluster must have been
// started with PeerProxy.
func (c *Cluster) Isolate(m *Member) {
	c.t.Helper()
	if m.proxy == nil {
		c.t.Fatal("Isolate needs a cluster started with PeerProxy")
	}
	id := strconv.FormatUint(c.MemberID(m), 16)
	for _, other := range c.Members {
		if other == m {
			other.proxy.block("")
		} else {
			other.proxy.block(id)
		}
	}
}

// Follower returns a member that is not the leader, as the members report.
func (c *Cluster) Follower() *Member {
	c.t.Helper()
	var follower *Member
	Poll(c.t, startTimeout, "a follower", func() bool {
		for _, m := range c.Members {
			st, err := c.status(m.Endpoint())
			if err == nil && st.GetLeader() != 0 && st.GetLeader() != st.GetHeader().GetMemberId() {
				follower = m
				return true
			}
		}
		return false
	})
	return follower
}

// MemberID asks m for its member ID.
func (c *Cluster) MemberID(m *Member) uint64 {
	c.t.Helper()
	var id uint64
	Poll(c.t, startTimeout, "member ID of "+m.Name, func() bool {
		var err error
		id, err = c.fetchMemberID(m.Endpoint())
		return err == nil
	})
	return id
}

func (c *Cluster) fetchMemberID(endpoint string) (uint64, error) {
	resp, err := c.status(endpoint)
	if err != nil {
		return 0, err
	}
	return resp.GetHeader().GetMemberId(), nil
}

// status asks the member at endpoint for its status.
func (c *Cluster) status(endpoint string) (*pb.StatusResponse, error) {
	creds := insecure.NewCredentials()
	if t, ok := c.http.Transport.(*http.Transport); ok {
		creds = credentials.NewTLS(t.TLSClientConfig)
	}
	conn, err := grpc.NewClient("passthrough:///"+endpoint, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return pb.NewMaintenanceClient(conn).Status(ctx, &pb.StatusRequest{})
}

// WaitHealthy waits until each of ms answers /health with a leader.
func (c *Cluster) WaitHealthy(ms ...*Member) {
	c.t.Helper()
	for _, m := range ms {
		Poll(c.t, startTimeout, m.Name+" healthy", func() bool { return c.isHealthy(m) })
	}
}

// WaitNoLeader waits until m reports that it has no leader.
func (c *Cluster) WaitNoLeader(m *Member) {
	c.t.Helper()
	Poll(c.t, startTimeout, m.Name+" without leader", func() bool { return !c.isHealthy(m) })
}

func (c *Cluster) isHealthy(m *Member) bool {
	resp, err := c.http.Get(m.ClientURL + "/health")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Poll calls cond until it holds, failing the test after timeout.
func Poll(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}

func logTail(t testing.TB, m *Member) {
	data, err := os.ReadFile(m.log)
	if err != nil {
		return
	}
	const keep = 4000
	if len(data) > keep {
		data = data[len(data)-keep:]
	}
	t.Logf("--- last lines of %s's log:\n%s", m.Name, data)
}
