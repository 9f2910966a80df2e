package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/testnet"
)

// copyDir copies a data directory.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -r %s %s: %v\n%s", src, dst, err, out)
	}
	if out, err := exec.Command("chmod", "-R", "u+w", dst).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v\n%s", err, out)
	}
}

// TestEtcdStartsOnCairnDataDir writes through cairn serve (past a snapshot),
// stops it, checks the data dir with etcdutl, then starts real etcd 3.7.3 on
// a copy: it serves the same keys at the same revision.
func TestEtcdStartsOnCairnDataDir(t *testing.T) {
	etcdutl, etcd := etcdref.Bin(t, "etcdutl"), etcdref.Bin(t, "etcd")
	ms := newCluster(t, 1, clusterOptions{snapshotCount: 20})
	m := ms[0]
	cli := client(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 50; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("k%02d", i), fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	want, err := cli.Get(ctx, "k", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	m.stop()

	db := filepath.Join(m.dataDir, "member", "snap", "db")
	out, err := exec.Command(etcdutl, "snapshot", "status", db, "-w", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("etcdutl snapshot status on cairn's db: %v\n%s", err, out)
	}
	var status struct{ Revision int64 }
	json.Unmarshal(out, &status)
	if status.Revision != want.Header.Revision {
		t.Errorf("etcdutl sees revision %d, cairn served %d", status.Revision, want.Header.Revision)
	}
	if out, err := exec.Command(etcdutl, "hashkv", db).CombinedOutput(); err != nil {
		t.Fatalf("etcdutl hashkv on cairn's db: %v\n%s", err, out)
	}

	startEtcdOnCopy(t, etcd, m)
	checkServesSame(t, m, "k", want)
}

// checkServesSame reads the keys under prefix from m, now served by etcd,
// and wants what cairn served: the same revision, cluster and keys.
func checkServesSame(t *testing.T, m *member, prefix string, want *clientv3.GetResponse) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := client(t, m).Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if got.Header.Revision != want.Header.Revision || got.Header.ClusterId != want.Header.ClusterId || len(got.Kvs) != len(want.Kvs) {
		t.Fatalf("etcd serves revision %d, cluster %x, %d keys; cairn served %d, %x, %d",
			got.Header.Revision, got.Header.ClusterId, len(got.Kvs), want.Header.Revision, want.Header.ClusterId, len(want.Kvs))
	}
	for i := range want.Kvs {
		if string(got.Kvs[i].Key) != string(want.Kvs[i].Key) || string(got.Kvs[i].Value) != string(want.Kvs[i].Value) ||
			got.Kvs[i].ModRevision != want.Kvs[i].ModRevision {
			t.Errorf("key %d: etcd %v, cairn %v", i, got.Kvs[i], want.Kvs[i])
		}
	}
}

// startEtcdOnCopy starts the etcd binary on a copy of the stopped member
// m's data dir, on m's addresses, until the test ends, and waits until it
// is healthy.
func startEtcdOnCopy(t *testing.T, etcd string, m *member) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "etcd-data")
	copyDir(t, m.dataDir, dir)
	etcdref.Run(t, etcd, m.name, dir, m.curl, m.purl)
}

// TestCairnStartsOnEtcdDataDir starts cairn serve on a copy of the data dir
// real etcd 3.7.3 wrote (testdata): it serves etcd's keys, cluster and
// member IDs.
func TestCairnStartsOnEtcdDataDir(t *testing.T) {
	m := &member{t: t, name: "m1", dataDir: filepath.Join(t.TempDir(), "data"), curl: testnet.FreeURL(t), purl: testnet.FreeURL(t)}
	copyDir(t, "../testdata/etcd-3.7.3/data", m.dataDir)
	resetRootPassword(t, m.dataDir)
	m.args = m.flags(m.name+"="+m.purl, "new", clusterOptions{})
	m.start()
	waitHealthy(t, m)
	var want struct {
		Header struct {
			ClusterID uint64 `json:"cluster_id"`
			MemberID  uint64 `json:"member_id"`
			Revision  int64  `json:"revision"`
		} `json:"header"`
		Kvs []struct {
			Key   []byte `json:"key"`
			Value []byte `json:"value"`
		} `json:"kvs"`
	}
	data, _ := os.ReadFile("../testdata/etcd-3.7.3/expected-get.json")
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client(t, m).Get(ctx, "\x00", clientv3.WithFromKey()); !errors.Is(err, rpctypes.ErrUserEmpty) {
		t.Errorf("anonymous read of etcd's data, which has authentication on: %v", err)
	}
	got, err := rootClient(t, m).Get(ctx, "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	if got.Header.ClusterId != want.Header.ClusterID || got.Header.MemberId != want.Header.MemberID || got.Header.Revision != want.Header.Revision {
		t.Errorf("header %v, etcd's was %+v", got.Header, want.Header)
	}
	if len(got.Kvs) != len(want.Kvs) {
		t.Fatalf("%d keys, etcd served %d", len(got.Kvs), len(want.Kvs))
	}
	for i := range want.Kvs {
		if string(got.Kvs[i].Key) != string(want.Kvs[i].Key) || string(got.Kvs[i].Value) != string(want.Kvs[i].Value) {
			t.Errorf("key %d: %q=%q, etcd served %q=%q", i, got.Kvs[i].Key, got.Kvs[i].Value, want.Kvs[i].Key, want.Kvs[i].Value)
		}
	}
}

// TestDBOlderThanTheSnapshotIsRefused: a member whose db was replaced by an
// older copy (its consistent index behind the newest .snap) refuses to
// start, in etcd's words, rather than serving stale data.
func TestDBOlderThanTheSnapshotIsRefused(t *testing.T) {
	ms := newCluster(t, 1, clusterOptions{snapshotCount: 50})
	m := ms[0]
	m.stop()
	db := filepath.Join(m.dataDir, "member", "snap", "db")
	old, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	m.start()
	waitHealthy(t, m)
	c := client(t, m)
	for i := range 60 { // more than --snapshot-count: a .snap newer than the old db
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		_, err := c.Put(ctx, fmt.Sprintf("k%d", i), "v")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	m.stop()
	if snaps, _ := filepath.Glob(filepath.Join(m.dataDir, "member", "snap", "*.snap")); len(snaps) == 0 {
		t.Fatal("no .snap file after 60 puts with --snapshot-count 50")
	}
	if err := os.WriteFile(db, old, 0o600); err != nil {
		t.Fatal(err)
	}
	m.start()
	select {
	case <-m.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the member started on a db older than its snapshot")
	}
	const want = "failed to find database snapshot file (snap: snapshot file doesn't exist)"
	if code := m.cmd.ProcessState.ExitCode(); code == 0 || !strings.Contains(m.log(), want) {
		t.Fatalf("exit %d, want an error with %q; log:\n%s", code, want, m.log())
	}
}
