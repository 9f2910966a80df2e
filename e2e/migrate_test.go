package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/testnet"
)

// migrateDir runs `migrate --data-dir dir --target-version target` with
// bin (cairn, or etcd's etcdutl) and returns its log.
func migrateDir(t *testing.T, bin, dir, target string) string {
	t.Helper()
	args := []string{"migrate", "--data-dir", dir, "--target-version", target}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, err, out)
	}
	return string(out)
}

// TestMigratedByCairnStartsUnderEtcd36: a cairn member downgraded to 3.6
// online (downgrade enable), stopped, its data dir migrated by cairn to the
// layout of 3.5 and back to 3.6's: real etcd 3.6 starts on it and serves
// the same keys at the same revision.
func TestMigratedByCairnStartsUnderEtcd36(t *testing.T) {
	etcd := etcdref.ReleaseBin(t, etcd36, "etcd")
	ms := newCluster(t, 1, clusterOptions{})
	m := ms[0]
	cli := client(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		if _, err := cli.Put(ctx, fmt.Sprintf("k%02d", i), fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Downgrade(ctx, clientv3.DowngradeEnable, "3.6"); err != nil {
		t.Fatal(err)
	}
	waitVersions(t, ms, "3.6.0", "3.6.0", &pb.DowngradeInfo{Enabled: true, TargetVersion: "3.6.0"})
	want, err := cli.Get(ctx, "", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	m.stop()
	if log := migrateDir(t, cairnBin, m.dataDir, "3.5"); !strings.Contains(log, `"new-storage-version":"3.5.0"`) {
		t.Errorf("migrate to 3.5 logged:\n%s", log)
	}
	if log := migrateDir(t, cairnBin, m.dataDir, "3.6"); !strings.Contains(log, `"new-storage-version":"3.6.0"`) {
		t.Errorf("migrate to 3.6 logged:\n%s", log)
	}
	startEtcdOnCopy(t, etcd, m)
	if v := versions(m); !strings.HasPrefix(v.Etcdserver, "3.6.") || v.Storage != "3.6.0" {
		t.Errorf("etcd %s runs at storage version %q", v.Etcdserver, v.Storage)
	}
	checkServesSame(t, m, "", want)
}

// TestEtcd36DataDirMigratedStartsUnderCairn: the data dir of a real etcd
// 3.6 member, migrated to 3.7's layout by etcd's etcdutl, by cairn, or not
// at all, starts under cairn: it serves the keys etcd wrote, at storage
// version 3.7.0.
func TestEtcd36DataDirMigratedStartsUnderCairn(t *testing.T) {
	etcd, etcdutl := etcdref.ReleaseBin(t, etcd36, "etcd"), etcdref.Bin(t, "etcdutl")
	src := &member{t: t, name: "m1", dataDir: filepath.Join(t.TempDir(), "data"), curl: testnet.FreeURL(t), purl: testnet.FreeURL(t)}
	var want *clientv3.GetResponse
	t.Run("etcd 3.6 writes", func(t *testing.T) { // its cleanup stops etcd
		etcdref.Run(t, etcd, src.name, src.dataDir, src.curl, src.purl)
		cli := client(t, src)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i := range 20 {
			if _, err := cli.Put(ctx, fmt.Sprintf("k%02d", i), fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		if want, err = cli.Get(ctx, "", clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
	})
	if want == nil {
		t.FailNow()
	}
	for _, tool := range []string{etcdutl, cairnBin, "no migration"} {
		t.Run(filepath.Base(tool), func(t *testing.T) {
			m := &member{t: t, name: src.name, dataDir: filepath.Join(t.TempDir(), "data"), curl: src.curl, purl: src.purl}
			copyDir(t, src.dataDir, m.dataDir)
			if tool != "no migration" {
				migrateDir(t, tool, m.dataDir, "3.7")
			}
			m.args = m.flags(m.name+"="+m.purl, "new", clusterOptions{})
			m.start()
			waitHealthy(t, m)
			checkServesSame(t, m, "", want)
			if v := versions(m); v.Storage != "3.7.0" {
				t.Errorf("storage version %q after the migration, want 3.7.0", v.Storage)
			}
		})
	}
}
