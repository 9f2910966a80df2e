package forensics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/store"
)

// fragmentedDataDir writes a data dir whose db has many free pages: values
// written and then compacted away.
func fragmentedDataDir(t *testing.T) string {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(snapDir(data), 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(store.Config{Backend: backend.Config{Path: dbPath(data)}})
	if err != nil {
		t.Fatal(err)
	}
	value := bytes.Repeat([]byte("x"), 2000)
	for i := range 600 {
		if _, err := s.Put(&pb.PutRequest{Key: fmt.Appendf(nil, "k%03d", i%20), Value: value}); err != nil {
			t.Fatal(err)
		}
	}
	done, err := s.Compact(590)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return data
}

func TestOfflineDefrag(t *testing.T) {
	data := fragmentedDataDir(t)
	before := fileSize(dbPath(data))
	keys := mustRun(t, "dump-db", "iterate-bucket", data, "key", "--decode")
	hash := mustRun(t, "hashkv", data)

	out := mustRun(t, "defrag", "--data-dir", data)
	after := fileSize(dbPath(data))
	if after >= before {
		t.Errorf("defrag: %d bytes before, %d after", before, after)
	}
	// The file's sizes, and the bytes in use, far fewer than the file's
	// before (most of its pages are free), and no more after.
	file := regexp.MustCompile(`(?m)^file: +\S+ \S+ \((\d+) bytes\) before, \S+ \S+ \((\d+) bytes\) after$`).FindStringSubmatch(out)
	inUse := regexp.MustCompile(`(?m)^in use: +\S+ \S+ \((\d+) bytes\) before, \S+ \S+ \((\d+) bytes\) after$`).FindStringSubmatch(out)
	if file == nil || inUse == nil || file[1] != fmt.Sprint(before) || file[2] != fmt.Sprint(after) {
		t.Fatalf("defrag reports %q; the file had %d bytes before, %d after", out, before, after)
	}
	if inUseBefore, inUseAfter := atoi(t, inUse[1]), atoi(t, inUse[2]); inUseAfter > inUseBefore || inUseBefore > before/2 || inUseAfter > after {
		t.Errorf("defrag reports %d bytes in use before, %d after, of files of %d and %d bytes", inUseBefore, inUseAfter, before, after)
	}
	if got := mustRun(t, "dump-db", "iterate-bucket", data, "key", "--decode"); got != keys {
		t.Error("defrag changed the key bucket")
	}
	if got := mustRun(t, "hashkv", data); got != hash {
		t.Errorf("hashkv after defrag %s, before %s", got, hash)
	}
	// A copy left by a crash in an earlier run does not get in the way.
	if err := os.WriteFile(dbPath(data)+".defrag", []byte("half a copy"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "defrag", "--data-dir", data)
	if _, err := os.Stat(dbPath(data) + ".defrag"); !os.IsNotExist(err) {
		t.Error("the leftover copy is still there")
	}
	if got := mustRun(t, "hashkv", data); got != hash {
		t.Errorf("hashkv after a second defrag %s, want %s", got, hash)
	}
	mustFail(t, []string{"failed to defragment", "no such file"}, "defrag", "--data-dir", filepath.Join(t.TempDir(), "none"))
	mustFail(t, []string{"--cluster and --data-dir"}, "defrag", "--data-dir", data, "--cluster")
}

// TestDefraggedDataDirServedByEtcd: a db that cairn's defrag wrote, page
// by page, is one real etcd 3.7.3 serves, with the same keys, and goes on
// writing and defragmenting itself.
func TestDefraggedDataDirServedByEtcd(t *testing.T) {
	dataDir, peer := restoreFixtureSnapshot(t)
	before := mustRun(t, "dump-db", "iterate-bucket", dataDir, "key", "--decode")
	mustRun(t, "defrag", "--data-dir", dataDir)
	if after := mustRun(t, "dump-db", "iterate-bucket", dataDir, "key", "--decode"); after != before {
		t.Fatal("defrag changed the key bucket")
	}
	m := startEtcd(t, dataDir, "r1", peer, "restored")
	var got, want struct {
		KVs json.RawMessage `json:"kvs"`
	}
	if err := json.Unmarshal([]byte(m.etcdctl(t, "get", "", "--prefix", "-w", "json")), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(fixtureFile(t, "expected-get.json")), &want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.KVs, want.KVs) {
		t.Errorf("etcd serves\n%s\nwant\n%s", got.KVs, want.KVs)
	}
	m.etcdctl(t, "put", "after-defrag", "v")
	m.etcdctl(t, "defrag")
	if v := m.etcdctl(t, "get", "after-defrag", "--print-value-only"); strings.TrimSpace(v) != "v" {
		t.Errorf("after etcd's own defrag: %q", v)
	}
}

// TestProgressPiped: with stderr piped, not a terminal, the kit shows no
// progress.
func TestProgressPiped(t *testing.T) {
	r := runCairn(t, "dump-logs", filepath.Join(copyFixture(t), "data"))
	if r.code != 0 || r.stderr != "" {
		t.Errorf("dump-logs piped: exit %d, stderr %q", r.code, r.stderr)
	}
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
