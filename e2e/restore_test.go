package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/testnet"
)

// TestServeRestoredSnapshot restores the snapshot real etcd 3.7.3 saved and
// serves it with cairn: every key comes back as etcd served it.
func TestServeRestoredSnapshot(t *testing.T) {
	m := &member{t: t, name: "m1", dataDir: filepath.Join(t.TempDir(), "restored"), curl: testnet.FreeURL(t), purl: testnet.FreeURL(t)}
	out, err := exec.Command(cairnBin, "snapshot", "restore", "../testdata/etcd-3.7.3/snapshot.db",
		"--data-dir", m.dataDir, "--name", m.name, "--initial-cluster", m.name+"="+m.purl,
		"--initial-advertise-peer-urls", m.purl).CombinedOutput()
	if err != nil {
		t.Fatalf("cairn snapshot restore: %v\n%s", err, out)
	}
	resetRootPassword(t, m.dataDir)
	m.args = m.flags(m.name+"="+m.purl, "new", clusterOptions{})
	m.start()
	waitHealthy(t, m)

	var want struct {
		Kvs []struct {
			Key            []byte `json:"key"`
			Value          []byte `json:"value"`
			CreateRevision int64  `json:"create_revision"`
			ModRevision    int64  `json:"mod_revision"`
			Version        int64  `json:"version"`
			Lease          int64  `json:"lease"`
		} `json:"kvs"`
	}
	data, err := os.ReadFile("../testdata/etcd-3.7.3/expected-get.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := rootClient(t, m).Get(ctx, "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != len(want.Kvs) {
		t.Fatalf("%d keys served, etcd served %d", len(got.Kvs), len(want.Kvs))
	}
	for i, kv := range got.Kvs {
		w := want.Kvs[i]
		if string(kv.Key) != string(w.Key) || string(kv.Value) != string(w.Value) || kv.CreateRevision != w.CreateRevision ||
			kv.ModRevision != w.ModRevision || kv.Version != w.Version || kv.Lease != w.Lease {
			t.Errorf("key %d: served %v, etcd served %+v", i, kv, w)
		}
	}
}
