// Package e2e starts real `cairn serve` processes on 127.0.0.1 and talks to
// them with the official etcd client.
package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/testnet"
	"github.com/cairnkv/cairn/internal/tlstest"
)

// cairnBin is the binary built once for the whole package.
var cairnBin string

// TestMain builds cairn (with the race detector) unless CAIRN_BIN names a
// binary to test instead.
func TestMain(m *testing.M) {
	if bin := os.Getenv("CAIRN_BIN"); bin != "" {
		cairnBin = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "cairn-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cairnBin = filepath.Join(dir, "cairn")
	build := exec.Command("go", "build", "-race", "-o", cairnBin, "../cmd/cairn")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build cairn:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// member is one `cairn serve` process and its configuration.
type member struct {
	t       *testing.T
	name    string
	dataDir string
	curl    string
	purl    string
	args    []string // the flags it is started with
	env     []string // variables it gets besides the test's own
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	// clientTLS is what clients connect with to an https member.
	clientTLS *tls.Config
}

// clusterOptions are the flags every member of a test cluster gets.
type clusterOptions struct {
	snapshotCount  int
	catchUpEntries int
	extraArgs      func(name string) []string // more flags for the member of that name
	// certs, when set, make every URL https, with client and peer
	// certificates required (--client-cert-auth, --peer-client-cert-auth).
	certs *tlstest.Certificates
	// autoTLS makes every URL https, with self-signed certificates
	// (--auto-tls, --peer-auto-tls).
	autoTLS bool
	// unix puts every client and peer URL on a Unix socket in the
	// working directory (unix://127.0.0.1:PORT, as etcd names them).
	unix bool
}

func (o clusterOptions) scheme() string {
	switch {
	case o.unix:
		return "unix://"
	case o.certs != nil || o.autoTLS:
		return "https://"
	}
	return "http://"
}

// clientTLS is what a client connects to a member with.
func (o clusterOptions) clientTLS(t *testing.T) *tls.Config {
	switch {
	case o.certs != nil:
		return o.certs.ClientConfig(t)
	case o.autoTLS:
		return &tls.Config{InsecureSkipVerify: true}
	}
	return nil
}

// newCluster starts n members and waits until they have a leader.
func newCluster(t *testing.T, n int, opts clusterOptions) []*member {
	t.Helper()
	ms := newMembers(t, n, opts)
	var initial []string
	for _, m := range ms {
		initial = append(initial, m.name+"="+m.purl)
	}
	for _, m := range ms {
		m.args = m.flags(strings.Join(initial, ","), "new", opts)
		m.start()
	}
	waitHealthy(t, ms...)
	return ms
}

// newMembers are n members m1...mn on free ports, not started.
func newMembers(t *testing.T, n int, opts clusterOptions) []*member {
	t.Helper()
	var ms []*member
	for i := 1; i <= n; i++ {
		ms = append(ms, &member{t: t, name: fmt.Sprintf("m%d", i), dataDir: filepath.Join(t.TempDir(), "data"),
			curl: opts.scheme() + testnet.FreeAddr(t), purl: opts.scheme() + testnet.FreeAddr(t), clientTLS: opts.clientTLS(t)})
	}
	return ms
}

func (m *member) flags(initialCluster, state string, opts clusterOptions) []string {
	args := []string{"serve", "--name", m.name, "--data-dir", m.dataDir,
		"--listen-client-urls", m.curl, "--advertise-client-urls", m.curl,
		"--listen-peer-urls", m.purl, "--initial-advertise-peer-urls", m.purl,
		"--initial-cluster-state", state,
		"--heartbeat-interval", "50", "--election-timeout", "500", "--log-format", "text",
		"--bcrypt-cost", "4"} // test passwords need no strength; the default cost is slow
	if initialCluster != "" { // none: bootstrapped otherwise (v3 discovery)
		args = append(args, "--initial-cluster", initialCluster)
	}
	if opts.snapshotCount > 0 {
		args = append(args, "--snapshot-count", fmt.Sprint(opts.snapshotCount))
	}
	if opts.catchUpEntries > 0 {
		args = append(args, "--snapshot-catchup-entries", fmt.Sprint(opts.catchUpEntries))
	}
	if c := opts.certs; c != nil {
		args = append(args, "--cert-file", c.ServerCert, "--key-file", c.ServerKey, "--trusted-ca-file", c.CAFile, "--client-cert-auth",
			"--peer-cert-file", c.ServerCert, "--peer-key-file", c.ServerKey, "--peer-trusted-ca-file", c.CAFile, "--peer-client-cert-auth")
	}
	if opts.autoTLS {
		args = append(args, "--auto-tls", "--peer-auto-tls")
	}
	if opts.extraArgs != nil {
		args = append(args, opts.extraArgs(m.name)...)
	}
	return args
}

// start runs the member's process; the test's cleanup kills it.
func (m *member) start() {
	m.t.Helper()
	m.logPath = filepath.Join(m.t.TempDir(), m.name+".log")
	logf, err := os.Create(m.logPath)
	if err != nil {
		m.t.Fatal(err)
	}
	m.cmd = exec.Command(cairnBin, m.args...)
	m.cmd.Env = append(os.Environ(), m.env...)
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	if err := m.cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	m.exited = make(chan struct{})
	go func() { m.cmd.Wait(); logf.Close(); close(m.exited) }()
	m.t.Cleanup(func() { m.kill() })
}

// kill ends the process with SIGKILL, as a crash would.
func (m *member) kill() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	select {
	case <-m.exited:
		return
	default:
	}
	m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.exited
}

// stop ends the process with SIGTERM and waits for a clean exit.
func (m *member) stop() {
	m.t.Helper()
	m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(20 * time.Second):
		m.t.Fatalf("%s did not stop within 20s of SIGTERM", m.name)
	}
	if code := m.cmd.ProcessState.ExitCode(); code != 0 {
		m.t.Errorf("%s exited with %d after SIGTERM; log:\n%s", m.name, code, m.log())
	}
}

func (m *member) log() string {
	b, _ := os.ReadFile(m.logPath)
	return string(b)
}

// waitHealthy polls /health of each member until it reports a leader.
func waitHealthy(t *testing.T, ms ...*member) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, m := range ms {
		hc, base := httpClient(m)
		for {
			resp, err := hc.Get(base + "/health")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-m.exited:
				t.Fatalf("%s exited; log:\n%s", m.name, m.log())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not healthy within 30s; log:\n%s", m.name, m.log())
			}
			time.Sleep(50 * time.Millisecond) // polling a condition, not waiting for time to pass
		}
		hc.CloseIdleConnections()
	}
}

func client(t *testing.T, ms ...*member) *clientv3.Client {
	t.Helper()
	var eps []string
	for _, m := range ms {
		eps = append(eps, m.curl)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, TLS: ms[0].clientTLS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// leaderAndRest returns the leader of ms and the other members; no leader
// fails the test.
func leaderAndRest(t *testing.T, ms []*member) (*member, []*member) {
	t.Helper()
	lead := leader(t, ms)
	if lead == nil {
		t.Fatal("no leader")
	}
	var rest []*member
	for _, m := range ms {
		if m != lead {
			rest = append(rest, m)
		}
	}
	return lead, rest
}

// leader returns the member that is leader, by asking each for its status.
func leader(t *testing.T, ms []*member) *member {
	t.Helper()
	for _, m := range ms {
		cli := client(t, m)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := cli.Status(ctx, m.curl)
		cancel()
		if err == nil && st.Leader == st.Header.MemberId {
			return m
		}
	}
	return nil
}

// httpClient returns an HTTP client for m's client URL and the base URL to
// use with it: a unix:// URL is reached as http over its socket.
func httpClient(m *member) (*http.Client, string) {
	tr := &http.Transport{TLSClientConfig: m.clientTLS}
	socket, isUnix := strings.CutPrefix(m.curl, "unix://")
	if !isUnix {
		return &http.Client{Transport: tr}, m.curl
	}
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}
	return &http.Client{Transport: tr}, "http://" + socket
}
