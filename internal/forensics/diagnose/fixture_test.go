package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/cairnkv/cairn/pkg/store"
)

// The fixture is one member of a real etcd 3.7.3 cluster: these tests
// check what is read of one dir, and that damage is reported, not fatal.

func TestDiagnoseFixture(t *testing.T) {
	dirs := copyDirs(t, []string{fixtureData})
	r := diagnoseJSON(t, dirs[0])
	m := memberOf(t, r, dirs[0])
	if m.MemberID != "1f4d227d440d78c2" || m.Name != "m1" || m.ClusterID != "3a78e69023e73ab2" {
		t.Errorf("member %s name %q cluster %s, want 1f4d227d440d78c2 m1 3a78e69023e73ab2", m.MemberID, m.Name, m.ClusterID)
	}
	if m.CommittedIndex != 81 || m.AppliedIndex != 81 || m.Revision != 63 || m.CompactRevision != 10 || m.SnapshotIndex != 41 {
		t.Errorf("commit %d applied %d revision %d compacted %d snapshot %d, want 81 81 63 10 41",
			m.CommittedIndex, m.AppliedIndex, m.Revision, m.CompactRevision, m.SnapshotIndex)
	}
	if m.WAL == nil || !m.WAL.Healthy || m.WAL.LastIndex != 81 || m.WAL.LastTerm != 2 {
		t.Errorf("wal %+v, want healthy, last index 81 term 2", m.WAL)
	}
	if m.HashKV == nil || m.HashRevision != 63 {
		t.Errorf("hashkv %v at %d, want one at revision 63", m.HashKV, m.HashRevision)
	}
	if r.Best == nil || r.Best.Dir != dirs[0] {
		t.Fatalf("best %+v, want %s", r.Best, dirs[0])
	}
	if len(r.Restores) != 1 || !strings.Contains(r.Restores[0].Command, "--skip-hash-check --name m1 --initial-cluster m1=http://127.0.0.1:42380") {
		t.Errorf("restores %+v", r.Restores)
	}
	out := runDiagnose(t, dirs[0])
	for _, want := range []string{"== member m1 (" + dirs[0] + ")", "hard state:              commit 81, term 2, vote 1f4d227d440d78c2",
		"latest snapshot:         index 41", "revisions:               current 63, compacted 10", "== verdict", "restore from: m1",
		"== commands to rebuild the cluster from it", "cp " + dirs[0] + "/member/snap/db m1.restore.db"} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("human output lacks %q:\n%s", want, out.stdout)
		}
	}
}

// A dir with no db, one with no WAL and one that does not exist are
// reported with what could be read; the verdict comes from the rest.
func TestDiagnoseMissingParts(t *testing.T) {
	dirs := copyDirs(t, []string{fixtureData, fixtureData, fixtureData})
	noDB, noWAL := filepath.Join(filepath.Dir(dirs[0]), "nodb"), filepath.Join(filepath.Dir(dirs[1]), "nowal")
	if err := os.Rename(dirs[0], noDB); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dirs[1], noWAL); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(noDB, "member", "snap", "db"))
	os.RemoveAll(filepath.Join(noWAL, "member", "wal"))
	missing := filepath.Join(filepath.Dir(dirs[0]), "missing")
	r := diagnoseJSON(t, noDB, noWAL, dirs[2], missing)
	if m := memberOf(t, r, noDB); m.DBError == "" || m.CommittedIndex != 81 || m.MemberID != "1f4d227d440d78c2" || m.Name != "m1" {
		t.Errorf("dir without db: %+v", m)
	}
	if m := memberOf(t, r, noWAL); m.WALError == "" || m.AppliedIndex != 81 || m.Revision != 63 {
		t.Errorf("dir without wal: %+v", m)
	}
	if m := memberOf(t, r, missing); m.WALError == "" || m.DBError == "" {
		t.Errorf("missing dir: %+v", m)
	}
	if r.Best == nil || r.Best.Dir != dirs[2] {
		t.Errorf("best %+v, want the only whole dir %s", r.Best, dirs[2])
	}
	if res := runDiagnose(t, missing); res.err == nil || !strings.Contains(res.stdout, "UNREADABLE") {
		t.Errorf("a dir with nothing: err %v, output:\n%s", res.err, res.stdout)
	}
}

// A db that a running member holds is reported as such.
func TestDiagnoseLockedDB(t *testing.T) {
	dirs := copyDirs(t, []string{fixtureData, fixtureData})
	db, err := bolt.Open(filepath.Join(dirs[0], "member", "snap", "db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := diagnoseJSON(t, dirs...)
	if m := memberOf(t, r, dirs[0]); !m.DBLocked || !strings.Contains(m.DBError, "locked") {
		t.Errorf("locked db: %+v", m)
	}
	if r.Best == nil || r.Best.Dir != dirs[1] {
		t.Errorf("best %+v, want %s", r.Best, dirs[1])
	}
	if out := runDiagnose(t, dirs...).stdout; !strings.Contains(out, "LOCKED, a running member holds it") {
		t.Errorf("human output does not say the db is held:\n%s", out)
	}
}

func TestDiagnoseRefusesOtherFormats(t *testing.T) {
	if res := runDiagnose(t, "-w", "table", fixtureData); res.err == nil || !strings.Contains(res.err.Error(), "not supported") {
		t.Errorf("-w table: %v", res.err)
	}
}

// A db behind its WAL's commit: the entries are listed, and the commands
// apply them on a copy before the snapshot is taken.
func TestDiagnoseUnapplied(t *testing.T) {
	dirs := copyDirs(t, []string{fixtureData})
	setConsistentIndex(t, dirs[0], 75)
	r := diagnoseJSON(t, dirs[0])
	m := memberOf(t, r, dirs[0])
	u := m.Unapplied
	if u == nil || u.First != 76 || u.Last != 81 || u.Count != 6 || u.InWAL != 6 {
		t.Fatalf("unapplied %+v, want entries 76-81, all in the WAL", u)
	}
	n := 0
	for _, c := range u.Kinds {
		n += c
	}
	if n != 6 {
		t.Errorf("kinds %v count %d entries, want 6", u.Kinds, n)
	}
	steps := strings.Join(r.RestoreSteps, "\n")
	for _, want := range []string{"lacks committed entries its WAL holds (6 entries, 76-81 (", "cp -a " + dirs[0] + " " + dirs[0] + ".apply", "--force-new-cluster",
		"snapshot save m1.restore.db"} {
		if !strings.Contains(steps, want) {
			t.Errorf("steps lack %q:\n%s", want, steps)
		}
	}
	if strings.Contains(r.Restores[0].Command, "--skip-hash-check") {
		t.Errorf("a restore from a saved snapshot skips its hash check: %s", r.Restores[0].Command)
	}
	if out := runDiagnose(t, dirs[0]).stdout; !strings.Contains(out, "committed, not applied:  6 entries, 76-81 (") {
		t.Errorf("human output does not list the entries:\n%s", out)
	}
}

// setConsistentIndex rewrites the db's consistent index, as if the member
// had died before its backend committed the last applies.
func setConsistentIndex(t *testing.T, dir string, index uint64) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "member", "snap", "db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(store.BucketMeta).Put(store.MetaConsistentIndex, store.EncodeUint64(index))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A db cut short and a WAL overwritten with garbage are reported, with
// what else could be read.
func TestDiagnoseGarbage(t *testing.T) {
	dirs := copyDirs(t, []string{fixtureData, fixtureData, fixtureData})
	db := filepath.Join(dirs[0], "member", "snap", "db")
	st, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(db, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dirs[1], "member", "wal", "*.wal"))
	if len(segs) == 0 {
		t.Fatal("the fixture has no WAL segment")
	}
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i*7 + 3)
	}
	if err := os.WriteFile(segs[0], garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	r := diagnoseJSON(t, dirs...)
	if m := memberOf(t, r, dirs[0]); m.DBError == "" || m.WAL == nil || !m.WAL.Healthy {
		t.Errorf("cut db: %+v", m)
	}
	if m := memberOf(t, r, dirs[1]); (m.WAL == nil || m.WAL.Healthy) && m.WALError == "" || m.Revision != 63 {
		t.Errorf("garbage WAL: %+v", m)
	}
	if r.Best == nil || r.Best.Dir != dirs[2] {
		t.Errorf("best %+v, want the whole dir %s", r.Best, dirs[2])
	}
	if out := runDiagnose(t, dirs...).stdout; !strings.Contains(out, "UNREADABLE") {
		t.Errorf("human output does not report the cut db:\n%s", out)
	}
}
