package forensics

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/cliutil/progress"
	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/faultfs"
	"github.com/cairnkv/cairn/internal/testnet"
	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/boltfile"
	"github.com/cairnkv/cairn/pkg/cluster"
	"github.com/cairnkv/cairn/pkg/snapfmt"
	"github.com/cairnkv/cairn/pkg/store"
	"github.com/cairnkv/cairn/pkg/writebehind"
)

// restoreArgs are the flags of a three-member restore, member beta.
func restoreArgs(dataDir string) []string {
	return []string{"--data-dir", dataDir, "--name", "beta",
		"--initial-cluster", "zeta=http://127.0.0.1:50009,alpha=http://127.0.0.1:50001,beta=http://127.0.0.1:50004,beta=http://127.0.0.1:50003",
		"--initial-cluster-token", "tok", "--initial-advertise-peer-urls", "http://127.0.0.1:50003,http://127.0.0.1:50004"}
}

// TestRestoreMatchesEtcdutl restores the fixture snapshot with
// cairn and with etcdutl, with the same flags, and compares what they
// wrote: the WAL byte for byte, the db's buckets, the .snap file.
func TestRestoreMatchesEtcdutl(t *testing.T) {
	etcdutl := etcdref.Bin(t, "etcdutl")
	root := copyFixture(t)
	snap := filepath.Join(root, "snapshot.db")
	ours, theirs := filepath.Join(t.TempDir(), "ours"), filepath.Join(t.TempDir(), "theirs")
	mustRun(t, append([]string{"snapshot", "restore", snap}, restoreArgs(ours)...)...)
	if out, err := exec.Command(etcdutl, append([]string{"snapshot", "restore", snap}, restoreArgs(theirs)...)...).CombinedOutput(); err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}

	walName := filepath.Join("member", "wal", "0000000000000000-0000000000000000.wal")
	if !bytes.Equal([]byte(readFile(t, filepath.Join(ours, walName))), []byte(readFile(t, filepath.Join(theirs, walName)))) {
		t.Errorf("the WALs differ:\nours:\n%s\netcdutl's:\n%s", mustRun(t, "dump-logs", ours), mustRun(t, "dump-logs", theirs))
	}
	for _, bucket := range []string{"key", "members", "members_removed", "lease", "auth", "authUsers", "authRoles", "cluster", "alarm"} {
		o := mustRun(t, "dump-db", "iterate-bucket", ours, bucket, "--decode")
		e := mustRun(t, "dump-db", "iterate-bucket", theirs, bucket, "--decode")
		if o != e {
			t.Errorf("bucket %s differs:\nours:\n%s\netcdutl's:\n%s", bucket, o, e)
		}
	}
	// meta: the same raft position; the conf state is the new membership
	// in ours, the snapshot's old one in etcdutl's.
	o := strings.Split(mustRun(t, "dump-db", "iterate-bucket", ours, "meta", "--decode"), "\n")
	e := strings.Split(mustRun(t, "dump-db", "iterate-bucket", theirs, "meta", "--decode"), "\n")
	wantConf := fmt.Sprintf("key=%q, value=%q", store.MetaConfState, cluster.MarshalConfState(&raftpb.ConfState{Voters: memberIDs(t, theirs)}))
	for i := range e {
		if strings.Contains(e[i], `"confState"`) {
			if o[i] != wantConf {
				t.Errorf("our confState: %s\nwant %s", o[i], wantConf)
			}
			continue
		}
		if o[i] != e[i] {
			t.Errorf("meta line %d: ours %s, etcdutl's %s", i, o[i], e[i])
		}
	}

	// The .snap files: the same metadata, and the same members in the v2
	// store (etcdutl creates them in map order, we in ID order).
	oSnap, eSnap := readOnlySnap(t, ours), readOnlySnap(t, theirs)
	if !proto.Equal(oSnap.GetMetadata(), eSnap.GetMetadata()) {
		t.Errorf(".snap metadata: ours %v, etcdutl's %v", oSnap.GetMetadata(), eSnap.GetMetadata())
	}
	if om, em := v2Members(t, oSnap.GetData()), v2Members(t, eSnap.GetData()); om != em {
		t.Errorf("v2 store members: ours %s, etcdutl's %s", om, em)
	}
	if len(oSnap.GetData()) != len(eSnap.GetData()) {
		t.Errorf("v2 store JSON: %d bytes, etcdutl's %d", len(oSnap.GetData()), len(eSnap.GetData()))
	}
}

// memberIDs returns the IDs in the members bucket of a data dir, sorted.
func memberIDs(t *testing.T, dataDir string) []uint64 {
	t.Helper()
	db, err := boltfile.Open(dbPath(dataDir), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ids []uint64
	err = db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(store.BucketMembers).ForEach(func(k, _ []byte) error {
			id, err := cluster.ParseMemberKey(k)
			ids = append(ids, id)
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

// readOnlySnap reads the one .snap file of a data dir.
func readOnlySnap(t *testing.T, dataDir string) *raftpb.Snapshot {
	t.Helper()
	files, _, err := snapfmt.List(snapDir(dataDir))
	if err != nil || len(files) != 1 {
		t.Fatalf("snap files of %s: %v %v", dataDir, files, err)
	}
	s, err := snapfmt.Read(files[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// v2Members returns the members of a v2 store JSON: ID → raftAttributes.
func v2Members(t *testing.T, data []byte) string {
	t.Helper()
	var st struct {
		Root struct {
			Children map[string]struct {
				Children map[string]struct {
					Children map[string]struct {
						Children map[string]struct{ Value string }
					}
				}
			}
		}
		CurrentIndex uint64
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for id, m := range st.Root.Children["0"].Children["members"].Children {
		parts = append(parts, id+"="+m.Children["raftAttributes"].Value)
	}
	slices.Sort(parts)
	return fmt.Sprintf("%v index %d", parts, st.CurrentIndex)
}

// restoreFixtureSnapshot restores the fixture snapshot with cairn into a new
// data dir of member r1 (cluster token "restored") on a free peer URL, with
// auth disabled, and returns the data dir and the peer URL.
func restoreFixtureSnapshot(t *testing.T) (dataDir, peer string) {
	t.Helper()
	root := copyFixture(t)
	dataDir = filepath.Join(t.TempDir(), "restored")
	peer = testnet.FreeURL(t)
	mustRun(t, "snapshot", "restore", filepath.Join(root, "snapshot.db"), "--data-dir", dataDir,
		"--name", "r1", "--initial-cluster", "r1="+peer, "--initial-advertise-peer-urls", peer, "--initial-cluster-token", "restored")
	disableAuth(t, dbPath(dataDir))
	return dataDir, peer
}

// TestRestoredDataDirServedByEtcd is acceptance 2: the fixture
// snapshot restored by cairn, real etcd 3.7.3 started on the result, and
// its keys read back equal expected-get.json's.
func TestRestoredDataDirServedByEtcd(t *testing.T) {
	dataDir, peer := restoreFixtureSnapshot(t)
	m := startEtcd(t, dataDir, "r1", peer, "restored")

	var got, want struct {
		Header struct{ Revision int64 }
		KVs    json.RawMessage `json:"kvs"`
	}
	if err := json.Unmarshal([]byte(m.etcdctl(t, "get", "", "--prefix", "-w", "json")), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(fixtureFile(t, "expected-get.json")), &want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.KVs, want.KVs) || got.Header.Revision != 63 {
		t.Errorf("etcd serves revision %d with\n%s\nwant revision 63 with\n%s", got.Header.Revision, got.KVs, want.KVs)
	}
	if members := m.etcdctl(t, "member", "list"); !strings.Contains(members, ", started, r1, "+peer) {
		t.Errorf("member list: %s", members)
	}
}

// TestEtcdutlRestoresCairnSnapshot is the other half of
// acceptance 2: a snapshot of a db written by cairn's store (with the
// sha256 trailer `snapshot save` appends), restored by the real etcdutl,
// served by the real etcd with the same keys.
func TestEtcdutlRestoresCairnSnapshot(t *testing.T) {
	etcdutl := etcdref.Bin(t, "etcdutl")
	snap, want := cairnSnapshot(t)
	dataDir := filepath.Join(t.TempDir(), "restored")
	peer := testnet.FreeURL(t)
	if out, err := exec.Command(etcdutl, "snapshot", "restore", snap, "--data-dir", dataDir, "--name", "c1",
		"--initial-cluster", "c1="+peer, "--initial-advertise-peer-urls", peer, "--initial-cluster-token", "cairn").CombinedOutput(); err != nil {
		t.Fatalf("etcdutl snapshot restore of a cairn snapshot: %v\n%s", err, out)
	}
	m := startEtcd(t, dataDir, "c1", peer, "cairn")
	var got pb.RangeResponse
	if err := json.Unmarshal([]byte(m.etcdctl(t, "get", "", "--prefix", "-w", "json")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != len(want.Kvs) {
		t.Fatalf("etcd serves %d keys, the store had %d", len(got.Kvs), len(want.Kvs))
	}
	for i := range want.Kvs {
		if !proto.Equal(got.Kvs[i], want.Kvs[i]) {
			t.Errorf("key %d: etcd serves %v, the store had %v", i, got.Kvs[i], want.Kvs[i])
		}
	}
	if got.Header.GetRevision() != want.Header.GetRevision() {
		t.Errorf("etcd at revision %d, the store at %d", got.Header.GetRevision(), want.Header.GetRevision())
	}
}

// cairnSnapshot writes a store with pkg/store (puts, a txn, deletes, a
// compaction), saves it as `snapshot save` does (the bbolt file and its
// sha256) and returns the file and every key the store holds.
func cairnSnapshot(t *testing.T) (string, *pb.RangeResponse) {
	t.Helper()
	dir := t.TempDir()
	s, err := store.Open(store.Config{Backend: backend.Config{Path: filepath.Join(dir, "db")}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 30 {
		if _, err := s.Put(&pb.PutRequest{Key: fmt.Appendf(nil, "/k/%02d", i%12), Value: fmt.Appendf(nil, "v%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Txn(&pb.TxnRequest{Success: []*pb.RequestOp{
		{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("txn/a"), Value: []byte("1")}}},
		{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("txn/b"), Value: []byte("2")}}},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteRange(&pb.DeleteRangeRequest{Key: []byte("/k/03")}); err != nil {
		t.Fatal(err)
	}
	done, err := s.Compact(20)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	want, err := s.Range(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := s.Backend().WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	path := filepath.Join(dir, "cairn-snapshot.db")
	if err := os.WriteFile(path, append(buf.Bytes(), sum[:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, want
}

// TestRestoreBumpRevision compares --bump-revision
// --mark-compacted with etcdutl's.
func TestRestoreBumpRevision(t *testing.T) {
	etcdutl := etcdref.Bin(t, "etcdutl")
	snap := filepath.Join(copyFixture(t), "snapshot.db")
	ours, theirs := filepath.Join(t.TempDir(), "ours"), filepath.Join(t.TempDir(), "theirs")
	mustRun(t, "snapshot", "restore", snap, "--data-dir", ours, "--bump-revision", "1000", "--mark-compacted")
	if out, err := exec.Command(etcdutl, "snapshot", "restore", snap, "--data-dir", theirs, "--bump-revision", "1000", "--mark-compacted").CombinedOutput(); err != nil {
		t.Fatalf("etcdutl: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"dump-db", "iterate-bucket", "%s", "key", "--limit", "2"},
		{"dump-db", "iterate-bucket", "%s", "meta"},
		{"hashkv", "%s"},
	} {
		run := func(dir string) string {
			a := append([]string(nil), args...)
			for i := range a {
				if a[i] == "%s" {
					a[i] = dir
				}
			}
			return mustRun(t, a...)
		}
		o, e := run(ours), run(theirs)
		if args[0] == "dump-db" && args[3] == "meta" {
			o, e = withoutLine(o, "confState"), withoutLine(e, "confState")
		}
		if o != e {
			t.Errorf("%v:\nours:\n%s\netcdutl's:\n%s", args, o, e)
		}
	}
	if got := mustRun(t, "snapshot", "status", dbPath(ours), "-w", "json"); !strings.Contains(got, `"revision":1063,"totalKey":35`) {
		t.Errorf("status after bump: %s", got)
	}
}

// withoutLine drops the lines containing s.
func withoutLine(text, s string) string {
	var keep []string
	for _, l := range strings.Split(text, "\n") {
		if !strings.Contains(l, s) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestRestoreRefuses checks the cases restore must refuse, each
// with a one-line reason, leaving nothing behind.
func TestRestoreRefuses(t *testing.T) {
	root := copyFixture(t)
	snap := filepath.Join(root, "snapshot.db")
	out := t.TempDir()
	target := filepath.Join(out, "data")

	badSHA := filepath.Join(root, "bad-sha.db")
	copyFile(t, snap, badSHA)
	flipByteAt(t, badSHA, fileSize(badSHA)-5)
	corrupt := filepath.Join(root, "corrupt.db")
	copyFile(t, snap, corrupt)
	flipByteAt(t, corrupt, 9000)

	for _, c := range []struct {
		args  []string
		wants []string
	}{
		{[]string{snap, "--data-dir", target, "--bump-revision", "5"}, []string{"--mark-compacted required"}},
		{[]string{snap, "--data-dir", target, "--mark-compacted"}, []string{"--mark-compacted is only allowed"}},
		{[]string{snap, "--data-dir", target, "--name", "zz"}, []string{`couldn't find local name "zz"`}},
		{[]string{snap, "--data-dir", target, "--initial-advertise-peer-urls", "http://127.0.0.1:1"}, []string{"missing from --initial-advertise-peer-urls"}},
		{[]string{snap, "--data-dir", target, "--initial-cluster", "default=ftp://x:1"}, []string{"scheme must be"}},
		{[]string{badSHA, "--data-dir", target}, []string{"bad-sha.db is corrupt", "sha256"}},
		{[]string{corrupt, "--data-dir", target}, []string{"corrupt.db is corrupt", "sha256"}},
		{[]string{filepath.Join(root, "data", "member", "snap", "db"), "--data-dir", target}, []string{"no sha256 trailer", "--skip-hash-check"}},
		{[]string{filepath.Join(root, "nope.db"), "--data-dir", target}, []string{"nope.db", "no such file"}},
		{[]string{snap, "--data-dir", filepath.Join(root, "data")}, []string{"is not empty", "refusing to overwrite"}},
	} {
		mustFail(t, c.wants, append([]string{"snapshot", "restore"}, c.args...)...)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("failed restores left %v behind", entries)
	}
	// A db copied out of a data dir restores with --skip-hash-check.
	mustRun(t, "snapshot", "restore", filepath.Join(root, "data", "member", "snap", "db"), "--data-dir", target, "--skip-hash-check")
	if got := mustRun(t, "hashkv", target, "-w", "json"); got != strings.SplitAfter(fixtureFile(t, "hashkv.jsonl"), "\n")[0] {
		t.Errorf("restored hashkv %s", got)
	}
}

// flipByteAt inverts the byte at off of the file at path.
func flipByteAt(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0xff
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreCopySyncsAsItWrites: snapshot restore syncs the db it copies
// out of the snapshot every writebehind.DefaultInterval bytes, not once at
// its end, so that a member sharing the disk does not wait for all of it
// at once; the copy is the snapshot without its trailer.
func TestRestoreCopySyncsAsItWrites(t *testing.T) {
	const syncs = 4
	db := bytes.Repeat([]byte("cairn db"), syncs*writebehind.DefaultInterval/8)
	sum := sha256.Sum256(db)
	src := filepath.Join(t.TempDir(), "snapshot.db")
	if err := os.WriteFile(src, append(db, sum[:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fs := faultfs.MountT(t, t.TempDir(), dir)
	// A delay of nothing to speak of, so that the fsyncs are counted.
	fs.Set(faultfs.Faults{FsyncDelay: time.Microsecond})
	dst := filepath.Join(dir, "db")
	if err := copySnapshotDB(src, dst, false, progress.New(io.Discard, "restore", int64(len(db)), false)); err != nil {
		t.Fatal(err)
	}
	if got := fs.Stats().DelayedFsyncs; got < syncs {
		t.Errorf("%d bytes copied with %d fsyncs, want at least %d (one every %d bytes)", len(db), got, syncs, writebehind.DefaultInterval)
	}
	if copied, err := os.ReadFile(dst); err != nil || !bytes.Equal(copied, db) {
		t.Errorf("the copy has %d bytes (%v), want the %d before the trailer", len(copied), err, len(db))
	}
}
