package forensics

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/internal/etcdref"
)

func TestSnapshotStatusEqualsEtcd(t *testing.T) {
	root := copyFixture(t)
	got := mustRun(t, "snapshot", "status", filepath.Join(root, "snapshot.db"), "-w", "json")
	if want := fixtureFile(t, "snapshot-status.json"); got != want {
		t.Errorf("snapshot status -w json = %s, want (etcdutl) %s", got, want)
	}
	if got := mustRun(t, "snapshot", "status", filepath.Join(root, "snapshot.db")); got != "2fbe27b2, 63, 34, 29 kB, 3.7.0\n" {
		t.Errorf("snapshot status = %q", got)
	}
}

func TestHashKVEqualsEtcd(t *testing.T) {
	data := filepath.Join(copyFixture(t), "data")
	want := strings.SplitAfter(fixtureFile(t, "hashkv.jsonl"), "\n")
	if got := mustRun(t, "hashkv", data, "-w", "json"); got != want[0] {
		t.Errorf("hashkv = %s, want %s", got, want[0])
	}
	if got := mustRun(t, "hashkv", filepath.Join(data, "member", "snap", "db"), "--rev", "30", "-w", "json"); got != want[1] {
		t.Errorf("hashkv --rev 30 = %s, want %s", got, want[1])
	}
	mustFail(t, []string{"required revision has been compacted"}, "hashkv", data, "--rev", "5")
	mustFail(t, []string{"required revision is a future revision"}, "hashkv", data, "--rev", "100")
}

// TestStatusAndHashKVFormatsEqualEtcdutl compares every output
// format of snapshot status and hashkv with etcdutl's, on the fixture and
// on a restore with a bumped revision (whose marker has an empty key).
// etcdutl hashkv writes to the file it reads (its meta page), so it gets a
// fresh copy each time.
func TestStatusAndHashKVFormatsEqualEtcdutl(t *testing.T) {
	etcdutl := etcdref.Bin(t, "etcdutl")
	root := copyFixture(t)
	bumped := filepath.Join(t.TempDir(), "bumped")
	if out, err := exec.Command(etcdutl, "snapshot", "restore", filepath.Join(root, "snapshot.db"), "--data-dir", bumped,
		"--bump-revision", "1000", "--mark-compacted").CombinedOutput(); err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}
	files := []string{filepath.Join(root, "snapshot.db"), filepath.Join(root, "data", "member", "snap", "db"), filepath.Join(bumped, "member", "snap", "db")}
	for _, file := range files {
		for _, format := range []string{"simple", "table", "json", "fields"} {
			for _, cmd := range [][]string{{"snapshot", "status", file}, {"hashkv", file}} {
				args := append(append([]string(nil), cmd...), "-w", format)
				scratch := filepath.Join(t.TempDir(), "copy.db")
				copyFile(t, file, scratch)
				refArgs := append(append([]string(nil), cmd[:len(cmd)-1]...), scratch, "-w", format)
				want, err := exec.Command(etcdutl, refArgs...).Output()
				if err != nil {
					t.Fatalf("etcdutl %v: %v", refArgs, err)
				}
				if got := mustRun(t, args...); got != string(want) {
					t.Errorf("cairn %v:\n%s\nwant (etcdutl):\n%s", args, got, want)
				}
			}
		}
	}
}
