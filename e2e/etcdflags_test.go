package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/testnet"
	"github.com/cairnkv/cairn/internal/tlstest"
)

// runbookVariables runs `cairn member add` through the CLI, as etcd's
// member-replacement runbook does with etcdctl, and returns the ETCD_*
// lines it prints, as NAME=value.
func runbookVariables(t *testing.T, endpoints []string, name, peerURL string) []string {
	t.Helper()
	var out []byte
	var err error
	// A cluster refuses additions until its members have been connected
	// for a while (--strict-reconfig-check).
	waitFor(t, 20*time.Second, "member add to succeed", func() bool {
		out, err = exec.Command(cairnBin, "--endpoints", strings.Join(endpoints, ","), "member", "add", name, "--peer-urls="+peerURL).CombinedOutput()
		return err == nil
	})
	var vars []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok || !strings.HasPrefix(k, "ETCD_") {
			continue
		}
		uq, err := strconv.Unquote(v)
		if err != nil {
			t.Fatalf("member add printed %q: %v", sc.Text(), err)
		}
		vars = append(vars, k+"="+uq)
	}
	return vars
}

// TestMemberReplacementRunbook is etcd's runbook for replacing a failed
// member: remove it, `member add` the new one, and start the new member
// with the ETCD_* variables member add printed (plus its listen URLs and
// data dir), no flags. It joins and serves a linearizable read.
func TestMemberReplacementRunbook(t *testing.T) {
	ms := newCluster(t, 3, clusterOptions{})
	cli := client(t, ms[0], ms[1])
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "before", "replacement"); err != nil {
		t.Fatal(err)
	}
	ms[2].kill() // the failed member
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Members {
		if m.Name == ms[2].name {
			if _, err := cli.MemberRemove(ctx, m.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	m4 := &member{t: t, name: "m4", dataDir: filepath.Join(t.TempDir(), "m4"), curl: testnet.FreeURL(t), purl: testnet.FreeURL(t)}
	vars := runbookVariables(t, []string{ms[0].curl, ms[1].curl}, m4.name, m4.purl)
	want := map[string]string{"ETCD_NAME": "m4", "ETCD_INITIAL_ADVERTISE_PEER_URLS": m4.purl, "ETCD_INITIAL_CLUSTER_STATE": "existing"}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		if w, ok := want[k]; ok && v != w {
			t.Errorf("%s=%q, want %q", k, v, w)
		}
		delete(want, k)
		if k == "ETCD_INITIAL_CLUSTER" && !strings.Contains(v, "m4="+m4.purl) {
			t.Errorf("ETCD_INITIAL_CLUSTER=%q lacks the new member", v)
		}
	}
	if len(want) > 0 || len(vars) != 4 {
		t.Fatalf("member add printed %q", vars)
	}
	m4.args = []string{"serve"}
	m4.env = append(vars, "ETCD_DATA_DIR="+m4.dataDir, "ETCD_LISTEN_PEER_URLS="+m4.purl,
		"ETCD_LISTEN_CLIENT_URLS="+m4.curl, "ETCD_ADVERTISE_CLIENT_URLS="+m4.curl)
	m4.start()
	waitHealthy(t, m4)
	got, err := client(t, m4).Get(ctx, "before") // linearizable: through the leader's read index
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "replacement" {
		t.Fatalf("read on the new member: %v, %v", got, err)
	}
	if !strings.Contains(m4.log(), "recognized and used environment variable") {
		t.Errorf("the variables were not logged as etcd does:\n%s", m4.log())
	}
}

// walFiles lists the WAL segments in dir.
func walFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestWALDir: --wal-dir puts the WAL there and not in the data dir, the
// member restarts from it, and a snapshot restored with
// `snapshot restore --wal-dir` starts with the same --wal-dir.
func TestWALDir(t *testing.T) {
	walDir := filepath.Join(t.TempDir(), "wal")
	ms := newCluster(t, 1, clusterOptions{extraArgs: func(string) []string { return []string{"--wal-dir", walDir} }})
	m := ms[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client(t, m).Put(ctx, "k", "in the wal dir"); err != nil {
		t.Fatal(err)
	}
	if len(walFiles(t, walDir)) == 0 {
		t.Fatalf("no WAL segment in --wal-dir %s", walDir)
	}
	if _, err := os.Stat(filepath.Join(m.dataDir, "member", "wal")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("member/wal in the data dir: %v", err)
	}
	snapshot := filepath.Join(t.TempDir(), "snap.db")
	if out, err := exec.Command(cairnBin, "--endpoints", m.curl, "snapshot", "save", snapshot).CombinedOutput(); err != nil {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}
	m.stop()
	m.start()
	waitHealthy(t, m)
	got, err := client(t, m).Get(ctx, "k")
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("after the restart: %v, %v", got, err)
	}
	m.stop()

	r := &member{t: t, name: "r1", dataDir: filepath.Join(t.TempDir(), "restored"), curl: testnet.FreeURL(t), purl: testnet.FreeURL(t)}
	rWAL := filepath.Join(t.TempDir(), "restored-wal")
	if out, err := exec.Command(cairnBin, "snapshot", "restore", snapshot, "--data-dir", r.dataDir, "--wal-dir", rWAL,
		"--name", r.name, "--initial-cluster", r.name+"="+r.purl, "--initial-advertise-peer-urls", r.purl).CombinedOutput(); err != nil {
		t.Fatalf("snapshot restore: %v\n%s", err, out)
	}
	r.args = append(r.flags(r.name+"="+r.purl, "new", clusterOptions{}), "--wal-dir", rWAL)
	r.start()
	waitHealthy(t, r)
	if got, err := client(t, r).Get(ctx, "k"); err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "in the wal dir" {
		t.Fatalf("restored member: %v, %v", got, err)
	}
	if len(walFiles(t, rWAL)) == 0 {
		t.Error("the restored member does not use the restored WAL dir")
	}
}

// TestForceNewCluster: a member of a 3-member cluster whose peers are gone
// restarts with --force-new-cluster as a one-member cluster with its data,
// takes writes, and stays so when restarted without the flag.
func TestForceNewCluster(t *testing.T) {
	ms := newCluster(t, 3, clusterOptions{snapshotCount: 20})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli := client(t, ms...)
	for i := 0; i < 50; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("k%02d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "m1 to apply every write", func() bool {
		resp, err := client(t, ms[0]).Get(ctx, "k49", clientv3.WithSerializable())
		return err == nil && len(resp.Kvs) == 1
	})
	for _, m := range ms {
		m.kill()
	}
	m := ms[0]
	m.args = append(m.args, "--force-new-cluster")
	m.start()
	waitHealthy(t, m)
	check := func(when string) {
		t.Helper()
		mc := client(t, m)
		list, err := mc.MemberList(ctx)
		if err != nil || len(list.Members) != 1 || list.Members[0].Name != m.name {
			t.Fatalf("%s: members %v, %v", when, list, err)
		}
		resp, err := mc.Get(ctx, "k", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil || resp.Count != 50 {
			t.Fatalf("%s: %v keys, %v", when, resp, err)
		}
		if _, err := mc.Put(ctx, "after", when); err != nil {
			t.Fatalf("%s: put: %v", when, err)
		}
	}
	check("forced")
	m.stop()
	m.args = m.args[:len(m.args)-1]
	m.start()
	waitHealthy(t, m)
	check("restarted")
}

// TestClientCRL: with --client-crl-file, a revoked client certificate is
// refused and the others are served.
func TestClientCRL(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	revokedCert, revokedKey := certs.IssueClient(t, "revoked")
	crl := certs.Revoke(t, revokedCert)
	ms := newCluster(t, 1, clusterOptions{certs: &certs, extraArgs: func(string) []string { return []string{"--client-crl-file", crl} }})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := client(t, ms[0]).Put(ctx, "k", "v"); err != nil {
		t.Fatalf("a good client certificate: %v", err)
	}
	bad, err := clientv3.New(clientv3.Config{Endpoints: []string{ms[0].curl}, DialTimeout: 2 * time.Second,
		TLS: certs.ConfigFor(t, revokedCert, revokedKey)})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
	defer rcancel()
	if _, err := bad.Put(rctx, "k", "revoked"); err == nil {
		t.Fatal("a revoked client certificate was served")
	}
	if !strings.Contains(ms[0].log(), "is revoked by --client-crl-file") {
		t.Errorf("the refusal is not logged:\n%s", ms[0].log())
	}
}

// TestServeTuningFlags: --watch-progress-notify-interval sets the period of
// progress notifications, --max-learners=0 refuses a learner,
// --max-snapshots keeps that many .snap files.
func TestServeTuningFlags(t *testing.T) {
	ms := newCluster(t, 1, clusterOptions{snapshotCount: 10, extraArgs: func(string) []string {
		return []string{"--watch-progress-notify-interval", "300ms", "--max-learners", "0", "--max-snapshots", "2"}
	}})
	m := ms[0]
	cli := client(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wch := cli.Watch(ctx, "w", clientv3.WithProgressNotify())
	select {
	case resp := <-wch:
		if !resp.IsProgressNotify() {
			t.Errorf("first watch response %+v, want a progress notification", resp)
		}
	case <-time.After(5 * time.Second):
		t.Error("no progress notification within 5s of a 300ms interval")
	}
	if _, err := cli.MemberAddAsLearner(ctx, []string{testnet.FreeURL(t)}); !errors.Is(err, rpctypes.ErrTooManyLearners) {
		t.Errorf("learner added with --max-learners 0: %v", err)
	}
	for i := 0; i < 60; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("s%02d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	// A snapshot's older files are removed right after it is written.
	waitFor(t, 10*time.Second, "2 snap files", func() bool {
		snaps, err := filepath.Glob(filepath.Join(m.dataDir, "member", "snap", "*.snap"))
		return err == nil && len(snaps) == 2
	})
}

// TestClientHTTPURLsHostsAndCORS: --listen-client-http-urls takes the
// HTTP services off the client URLs, which serve gRPC only;
// --host-whitelist refuses other Host headers with etcd's 421, --cors
// answers the listed origins.
func TestClientHTTPURLsHostsAndCORS(t *testing.T) {
	httpURL := testnet.FreeURL(t)
	m := &member{t: t, name: "m1", dataDir: filepath.Join(t.TempDir(), "data"), curl: testnet.FreeURL(t), purl: testnet.FreeURL(t)}
	m.args = append(m.flags(m.name+"="+m.purl, "new", clusterOptions{}), "--listen-client-http-urls", httpURL,
		"--host-whitelist", "127.0.0.1", "--cors", "http://allowed.example:80")
	m.start()
	get := func(url, host, origin string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	waitFor(t, 30*time.Second, "/health on the http URL", func() bool {
		resp, err := get(httpURL+"/health", "", "")
		return err == nil && resp.StatusCode == http.StatusOK
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client(t, m).Put(ctx, "k", "v"); err != nil {
		t.Fatalf("gRPC on the client URL: %v", err)
	}
	if resp, err := get(m.curl+"/health", "", ""); err == nil && resp.StatusCode == http.StatusOK {
		t.Error("/health is served on the gRPC-only client URL")
	}
	if resp, err := get(httpURL+"/version", "evil.example", ""); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a Host the whitelist lacks: %v, %v", resp, err)
	}
	for origin, want := range map[string]string{"http://allowed.example:80": "http://allowed.example:80", "http://other.example:80": ""} {
		resp, err := get(httpURL+"/version", "", origin)
		if err != nil || resp.Header.Get("Access-Control-Allow-Origin") != want {
			t.Errorf("origin %s: %v, %v; want Access-Control-Allow-Origin %q", origin, resp, err, want)
		}
	}
}
