package forensics

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairnkv/cairn/pkg/store"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// Acceptance 3: each kind of damage gets a precise one-line diagnosis and a
// non-zero exit from every command that reads the damaged file; none
// panics; `wal repair` fixes a torn tail and nothing else.

// fixtureWAL is the one segment of the fixture's WAL.
func fixtureWAL(data string) string {
	return filepath.Join(walDir(data), "0000000000000000-0000000000000000.wal")
}

func TestDamageTornWALTail(t *testing.T) {
	data := filepath.Join(copyFixture(t), "data")
	seg := fixtureWAL(data)
	whole := readFile(t, seg)
	if err := os.Truncate(seg, 7950); err != nil { // the last frame (a hard state at 7928) loses 10 bytes
		t.Fatal(err)
	}
	diag := []string{"0000000000000000-0000000000000000.wal at offset 7928", "torn frame"}
	mustFail(t, diag, "wal", "verify", data)
	mustFail(t, diag, "dump-logs", data)
	if out := runCairn(t, "wal", "verify", data).stdout; !strings.Contains(out, "cairn wal repair") {
		t.Errorf("verify does not point at repair:\n%s", out)
	}

	out := mustRun(t, "wal", "repair", data)
	if !strings.Contains(out, "truncated 0000000000000000-0000000000000000.wal at offset 7928, cutting 22 bytes") {
		t.Errorf("repair says:\n%s", out)
	}
	if got := readFile(t, seg); got != whole[:7928] {
		t.Errorf("repaired segment is %d bytes, want the first 7928 of the original", len(got))
	}
	if got := readFile(t, seg+walfmt.BrokenExt); got != whole[7928:7950] {
		t.Errorf(".broken holds %q, want the cut bytes", got)
	}
	mustRun(t, "wal", "verify", data)
	if out := mustRun(t, "wal", "repair", data); !strings.Contains(out, "nothing to repair") {
		t.Errorf("second repair says %q", out)
	}
}

// TestDamageBeforeTheLastRecord: damage in the last segment with a good
// record after it is no torn tail: verify must not point at a repair that
// refuses.
func TestDamageBeforeTheLastRecord(t *testing.T) {
	data := filepath.Join(copyFixture(t), "data")
	flipByteAt(t, fixtureWAL(data), 7900) // inside the entry at 7864; the hard state at 7928 is intact
	mustFail(t, []string{"at offset 7864", "crc mismatch"}, "wal", "verify", data)
	if out := runCairn(t, "wal", "verify", data).stdout; strings.Contains(out, "cairn wal repair") {
		t.Errorf("verify points at repair, which refuses:\n%s", out)
	}
	mustFail(t, []string{"not repairable", "good records follow the damage"}, "wal", "repair", data)
}

func TestDamageFlippedByteMidWAL(t *testing.T) {
	data := filepath.Join(copyFixture(t), "data")
	seg := fixtureWAL(data)
	flipByteAt(t, seg, 1100) // inside the entry at 1072 (index 11)
	before := treeDigest(t, data)
	diag := []string{"0000000000000000-0000000000000000.wal at offset 1072", "crc mismatch"}
	mustFail(t, diag, "wal", "verify", data)
	mustFail(t, diag, "dump-logs", data)
	mustFail(t, append(diag, "not repairable"), "wal", "repair", data)
	if treeDigest(t, data) != before {
		t.Error("a refused repair changed the WAL")
	}
	// dump-logs goes on after the damage: the entries after 11 are listed.
	r := runCairn(t, "dump-logs", data, "-w", "json")
	if !strings.Contains(r.stdout, `"record":"damage"`) || !strings.Contains(r.stdout, `"index":81,`) {
		t.Errorf("dump-logs did not continue past the damage:\n%s", r.stdout)
	}
}

func TestDamageMissingSegment(t *testing.T) {
	data, w := newTestWAL(t, 4096)
	for i := uint64(1); i <= 200; i++ {
		if err := w.Save(hardState(1, i), []*raftpb.Entry{testEntry(1, i, putData(t, i, fmt.Sprint("key-", i), "value"))}); err != nil {
			t.Fatal(err)
		}
	}
	segs := w.Segments()
	w.Close()
	if len(segs) < 3 {
		t.Fatalf("%d segments, want at least 3", len(segs))
	}
	missing := segs[1]
	if err := os.Remove(missing.Path); err != nil {
		t.Fatal(err)
	}
	diag := []string{"missing segment"}
	line := mustFail(t, diag, "wal", "verify", data)
	if !strings.Contains(line, "entries") && !strings.Contains(line, fmt.Sprintf("%016x", missing.Seq+1)) {
		t.Errorf("verify does not say where: %s", line)
	}
	mustFail(t, diag, "dump-logs", data)
	mustFail(t, append(diag, "not repairable"), "wal", "repair", data)
}

func TestDamageTruncatedSnap(t *testing.T) {
	data := filepath.Join(copyFixture(t), "data")
	snap := filepath.Join(snapDir(data), "0000000000000002-0000000000000029.snap")
	if err := os.Truncate(snap, 3000); err != nil {
		t.Fatal(err)
	}
	mustFail(t, []string{"0000000000000002-0000000000000029.snap", "truncated snapshot file"}, "wal", "verify", data)
}

// zeroKeyBucketPage zeroes the root page of the key bucket of the db at
// path and returns its number.
func zeroKeyBucketPage(t *testing.T, path string) int64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var page int64
	var pageSize int
	db.View(func(tx *bolt.Tx) error {
		page = int64(tx.Bucket(store.BucketKey).Root())
		pageSize = db.Info().PageSize
		return nil
	})
	db.Close()
	b := []byte(readFile(t, path))
	clear(b[page*int64(pageSize) : (page+1)*int64(pageSize)])
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return page
}

func TestDamageZeroedDBPage(t *testing.T) {
	root := copyFixture(t)
	data := filepath.Join(root, "data")
	page := zeroKeyBucketPage(t, dbPath(data))
	before := treeDigest(t, data)
	diag := []string{"corrupt bbolt file", fmt.Sprint(page)}
	mustFail(t, diag, "dump-db", "iterate-bucket", data, "key")
	mustFail(t, diag, "dump-db", "history", data, "foo")
	mustFail(t, diag, "dump-db", "hash", data)
	mustFail(t, diag, "hashkv", data)
	mustFail(t, diag, "snapshot", "status", dbPath(data))
	mustFail(t, diag, "defrag", "--data-dir", data)
	if treeDigest(t, data) != before {
		t.Error("a command changed the damaged data dir")
	}
	if _, err := os.Stat(dbPath(data) + ".defrag"); !os.IsNotExist(err) {
		t.Error("a failed defrag left its copy behind")
	}
	// The same damage inside a snapshot file, restored with
	// --skip-hash-check: refused, nothing left behind.
	snap := filepath.Join(root, "snapshot.db")
	zeroKeyBucketPage(t, snap)
	target := filepath.Join(t.TempDir(), "restored")
	mustFail(t, []string{"corrupt"}, "snapshot", "restore", snap, "--data-dir", target, "--skip-hash-check")
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Error("a failed restore left a data dir")
	}
}

func TestDamageSnapshotFile(t *testing.T) {
	root := copyFixture(t)
	snap := filepath.Join(root, "snapshot.db")
	bad := filepath.Join(root, "bad-sha.db")
	copyFile(t, snap, bad)
	flipByteAt(t, bad, fileSize(bad)-1) // the last byte of the sha256
	diag := []string{"bad-sha.db is corrupt: its sha256 trailer does not match its contents"}
	mustFail(t, diag, "snapshot", "status", bad)
	mustFail(t, diag, "snapshot", "restore", bad, "--data-dir", filepath.Join(t.TempDir(), "x"))

	// Truncated: the trailer check fails first; without a trailer the
	// bbolt meta page says how much is missing.
	trunc := filepath.Join(root, "trunc.db")
	b := []byte(readFile(t, snap))
	if err := os.WriteFile(trunc, b[:20000], 0o600); err != nil {
		t.Fatal(err)
	}
	mustFail(t, []string{"trunc.db is corrupt"}, "snapshot", "status", trunc)
	if err := os.WriteFile(trunc, b[:20001], 0o600); err != nil {
		t.Fatal(err)
	}
	mustFail(t, []string{"bbolt file is truncated", "but the file has 20001 bytes"}, "snapshot", "status", trunc)
	mustFail(t, []string{"bbolt file is truncated"}, "hashkv", trunc)
	mustFail(t, []string{"bbolt file is truncated"}, "dump-db", "list-bucket", trunc)
}
