package forensics

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/store"
)

func TestDumpDBListBucketEqualsEtcd(t *testing.T) {
	data := filepath.Join(copyFixture(t), "data")
	got := mustRun(t, "dump-db", "list-bucket", data)
	if want := fixtureFile(t, "etcd-dump-db.list-bucket.txt"); got != want {
		t.Errorf("list-bucket:\n%s\nwant (etcd-dump-db):\n%s", got, want)
	}
}

// TestDumpDBIterateBucketEqualsEtcd compares iterate-bucket
// --decode with etcd-dump-db's output, line for line, for every bucket the
// fixtures have an output of.
func TestDumpDBIterateBucketEqualsEtcd(t *testing.T) {
	data := filepath.Join(copyFixture(t), "data")
	for _, bucket := range []string{"key", "meta", "lease", "auth", "authUsers", "authRoles", "members", "cluster"} {
		got := mustRun(t, "dump-db", "iterate-bucket", data, bucket, "--decode")
		if want := fixtureFile(t, "etcd-dump-db."+bucket+".txt"); got != want {
			t.Errorf("iterate-bucket %s --decode:\n%s\nwant (etcd-dump-db):\n%s", bucket, got, want)
		}
	}
	// The cluster fixture: three members, one removed.
	cluster := t.TempDir()
	copyTree(t, "../../testdata/etcd-3.7.3-cluster", cluster)
	for _, bucket := range []string{"members", "members_removed"} {
		got := mustRun(t, "dump-db", "iterate-bucket", filepath.Join(cluster, "m1"), bucket, "--decode")
		want := readFile(t, filepath.Join(cluster, "etcd-dump-db."+bucket+".txt"))
		if got != want {
			t.Errorf("cluster iterate-bucket %s --decode:\n%s\nwant (etcd-dump-db):\n%s", bucket, got, want)
		}
	}
}

func TestDumpDBIterateRawAndLimit(t *testing.T) {
	data := filepath.Join(copyFixture(t), "data")
	got := mustRun(t, "dump-db", "iterate-bucket", data, "key", "--decode", "--limit", "2")
	want := strings.SplitAfterN(fixtureFile(t, "etcd-dump-db.key.txt"), "\n", 3)
	if got != want[0]+want[1] {
		t.Errorf("--limit 2: got\n%s", got)
	}
	got = mustRun(t, "dump-db", "iterate-bucket", data, "cluster")
	if got != "key=\"clusterVersion\", value=\"3.7.0\"\n" {
		t.Errorf("raw cluster bucket: %q", got)
	}
	got = mustRun(t, "dump-db", "iterate-bucket", data, "meta", "--limit", "1")
	if got != "key=\"term\", value=\"\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\"\n" {
		t.Errorf("raw meta: %q", got)
	}
	// The operand may come first.
	if got := mustRun(t, "dump-db", "iterate-bucket", "cluster", data); !strings.Contains(got, "clusterVersion") {
		t.Errorf("bucket before data dir: %q", got)
	}
	// A db file works as well as a data dir.
	if got := mustRun(t, "dump-db", "list-bucket", filepath.Join(data, "member", "snap", "db")); !strings.HasPrefix(got, "alarm\n") {
		t.Errorf("list-bucket of the db file: %q", got)
	}
	mustFail(t, []string{`bucket "nope" not found`}, "dump-db", "iterate-bucket", data, "nope")
}

func TestDumpDBHash(t *testing.T) {
	data := filepath.Join(copyFixture(t), "data")
	got := mustRun(t, "dump-db", "hash", data)
	if !strings.HasPrefix(got, "db path: "+filepath.Join(data, "member", "snap", "db")+"\nHash: ") {
		t.Errorf("hash output: %q", got)
	}
}

func TestDumpDBHistory(t *testing.T) {
	data := filepath.Join(copyFixture(t), "data")

	// foo: put, put, txn put, delete, put; compaction at 10 kept only the
	// last generation.
	got := mustRun(t, "dump-db", "history", data, "foo")
	for _, want := range []string{
		`key "foo": 1 generation(s), db at revision 63, compacted at revision 10`,
		"generation 1: created at revision 7, live",
		`7_0          put          1        7        7                0  "reborn"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("history foo lacks %q:\n%s", want, got)
		}
	}
	// doomed: created with a lease, deleted by the lease's revocation.
	got = mustRun(t, "dump-db", "history", data, "doomed")
	for _, want := range []string{"created at revision 41, deleted at revision 42", "78c2a2281687072e", "42_0         delete"} {
		if !strings.Contains(got, want) {
			t.Errorf("history doomed lacks %q:\n%s", want, got)
		}
	}
	// counter: 20 versions, one JSON object each.
	lines := strings.Split(strings.TrimSpace(mustRun(t, "dump-db", "history", data, "counter", "-w", "json")), "\n")
	if len(lines) != 20 {
		t.Fatalf("history counter -w json: %d lines, want 20", len(lines))
	}
	var last historyJSON
	if err := json.Unmarshal([]byte(lines[19]), &last); err != nil {
		t.Fatal(err)
	}
	if last.Main != 62 || last.Version != 20 || last.CreateRevision != 43 || string(last.Value) != "20" || string(last.Key) != "counter" {
		t.Errorf("last revision of counter: %+v", last)
	}
	mustFail(t, []string{`key "missing" has no revision`}, "dump-db", "history", data, "missing")
}

// TestReadCommandsNeverWrite runs every read-only command on a data
// directory and checks that not a byte, mode or time changed.
func TestReadCommandsNeverWrite(t *testing.T) {
	root := copyFixture(t)
	data := filepath.Join(root, "data")
	before := treeDigest(t, root)
	for _, args := range [][]string{
		{"dump-db", "list-bucket", data},
		{"dump-db", "iterate-bucket", data, "key", "--decode"},
		{"dump-db", "hash", data},
		{"dump-db", "history", data, "foo"},
		{"hashkv", data},
		{"snapshot", "status", filepath.Join(root, "snapshot.db")},
		{"snapshot", "status", filepath.Join(data, "member", "snap", "db")},
		{"dump-logs", data},
		{"dump-logs", data, "-w", "json", "--raw"},
		{"wal", "verify", data},
	} {
		mustRun(t, args...)
	}
	if after := treeDigest(t, root); after != before {
		t.Error("a read-only command changed the data directory")
	}
}

// FuzzBucketEntry renders arbitrary entries of every bucket: a
// line comes back (raw, with the reason, if the entry does not decode),
// never a panic.
func FuzzBucketEntry(f *testing.F) {
	f.Add(uint8(0), []byte("\x00\x00\x00\x00\x00\x00\x00\x05_\x00\x00\x00\x00\x00\x00\x00\x00"), []byte("\n\x03foo"))
	f.Add(uint8(1), []byte("confState"), []byte(`{"voters":[1]}`))
	f.Add(uint8(2), []byte("x"), []byte{0xff})
	buckets := make([]string, 0, len(bucketDecoders))
	for b := range bucketDecoders {
		buckets = append(buckets, b)
	}
	slices.Sort(buckets)
	f.Fuzz(func(t *testing.T, which uint8, k, v []byte) {
		bucket := buckets[int(which)%len(buckets)]
		line, _ := formatBucketEntry(bucket, k, v, true)
		if line == "" || strings.Contains(line, "\n") {
			t.Errorf("bucket %s: line %q", bucket, line)
		}
	})
}

// TestLockedDB: a db that a running member holds is reported, not
// waited on forever.
func TestLockedDB(t *testing.T) {
	data := filepath.Join(copyFixture(t), "data")
	s, err := store.Open(store.Config{Backend: backend.Config{Path: dbPath(data)}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustFail(t, []string{"locked by another process"}, "dump-db", "list-bucket", data)
}
