package diagnose

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/client/clienttest"
	"github.com/cairnkv/cairn/internal/etcdref"
)

// The data dirs of real 3-member clusters, cairn's and etcd 3.7.3's: one
// stops early, and copies of the dirs get a torn WAL or a diverged db.

func TestDiagnoseCairnCluster(t *testing.T) {
	testDiagnoseCluster(t, []string{cairnBin(t), "serve"})
}

func TestDiagnoseEtcdCluster(t *testing.T) {
	testDiagnoseCluster(t, []string{etcdref.Bin(t, "etcd")})
}

// Revisions of the dead cluster: 10 keys written with all three members
// up, 10 more once one is stopped.
const (
	revWhenEarlyStopped = 11
	revAtEnd            = 21
)

// deadCluster runs a 3-member cluster of server, stops a follower early,
// writes on, and kills the others; it returns the data dirs and names of
// the two that ran to the end, then of the one stopped early. Stopping a
// follower keeps the writes free of leader elections, so the revisions
// are known.
func deadCluster(t *testing.T, server []string) (dirs, names []string) {
	t.Helper()
	c := clienttest.StartCluster(t, clienttest.Options{Size: 3, Server: server})
	early := c.Follower()
	var ms []*clienttest.Member
	for _, m := range c.Members {
		if m != early {
			ms = append(ms, m)
		}
	}
	ms = append(ms, early)
	putKeys(t, c.Endpoints(), "k", 10)
	waitRevision(t, early.ClientURL, revWhenEarlyStopped)
	// Past the backends' batch interval (100 ms), so that the dbs have
	// committed what the members applied: the early one's db then has
	// the keys the diverged case changes, and the restore commands copy
	// the db.
	time.Sleep(time.Second)
	early.Kill()
	putKeys(t, []string{ms[0].Endpoint(), ms[1].Endpoint()}, "later", 10)
	waitRevision(t, ms[0].ClientURL, revAtEnd)
	waitRevision(t, ms[1].ClientURL, revAtEnd)
	time.Sleep(time.Second)
	ms[0].Kill()
	ms[1].Kill()
	for _, m := range ms {
		dirs, names = append(dirs, m.DataDir), append(names, m.Name)
	}
	return dirs, names
}

func testDiagnoseCluster(t *testing.T, server []string) {
	dirs, names := deadCluster(t, server)
	var best int // index in dirs of the member chosen in the first case

	t.Run("stopped early", func(t *testing.T) {
		r := diagnoseJSON(t, dirs...)
		if r.Best == nil || r.Best.Dir == dirs[2] {
			t.Fatalf("best %+v, want one of the two that ran to the end", r.Best)
		}
		best = indexOf(dirs, r.Best.Dir)
		top, early := memberOf(t, r, dirs[best]), memberOf(t, r, dirs[2])
		for i, m := range []memberJSON{memberOf(t, r, dirs[0]), memberOf(t, r, dirs[1]), early} {
			if m.MemberID == "0" || m.Name != names[i] || m.ClusterID == "" || m.WAL == nil || !m.WAL.Healthy {
				t.Errorf("member %d: %+v", i+1, m)
			}
		}
		if top.Revision != revAtEnd || early.Revision != revWhenEarlyStopped {
			t.Errorf("revisions %d (best) and %d (early), want %d and %d", top.Revision, early.Revision, revAtEnd, revWhenEarlyStopped)
		}
		if early.CommittedIndex >= top.CommittedIndex || early.AppliedIndex >= top.AppliedIndex {
			t.Errorf("early committed %d applied %d, the best %d %d: want early behind", early.CommittedIndex, early.AppliedIndex, top.CommittedIndex, top.AppliedIndex)
		}
		if early.Loss.Revisions != revAtEnd-revWhenEarlyStopped || early.Loss.Entries < 10 || top.Loss.Summary != "nothing" {
			t.Errorf("losses: early %+v, best %+v", early.Loss, top.Loss)
		}
		if r.CommonRevision != revWhenEarlyStopped || len(r.Divergence) > 0 {
			t.Errorf("common revision %d, divergence %v: want %d and none", r.CommonRevision, r.Divergence, revWhenEarlyStopped)
		}
		out := runDiagnose(t, dirs...).stdout
		for _, want := range []string{"== member " + names[0] + " (", "== member " + names[2] + " (", "== verdict", "restore from: " + top.Name,
			"divergence:   none: the dbs hash the same at revision 11", names[2] + " (" + dirs[2] + "): 10 committed entries, 10 revisions",
			"snapshot restore"} {
			if !strings.Contains(out, want) {
				t.Errorf("human output lacks %q:\n%s", want, out)
			}
		}
		checkRestore(t, dirs)
	})

	t.Run("torn WAL", func(t *testing.T) {
		copies := copyDirs(t, dirs)
		tearWAL(t, copies[best])
		r := diagnoseJSON(t, copies...)
		torn := memberOf(t, r, copies[best])
		if torn.WAL == nil || torn.WAL.Healthy || len(torn.WAL.Problems) == 0 || !torn.WAL.TornTailOnly {
			t.Errorf("torn WAL reported as %+v", torn.WAL)
		}
		other := copies[1-best]
		if r.Best == nil || r.Best.Dir != other {
			t.Errorf("best %+v, want %s: the other one is torn, the third behind", r.Best, other)
		}
		out := runDiagnose(t, copies...).stdout
		if !strings.Contains(out, "wal damage:              1 problem(s) (only a torn tail") {
			t.Errorf("human output does not report the torn tail:\n%s", out)
		}
	})

	t.Run("diverged db", func(t *testing.T) {
		copies := copyDirs(t, dirs)
		changeValue(t, copies[best], "k3", "tampered")
		r := diagnoseJSON(t, copies...)
		if m := memberOf(t, r, copies[best]); !m.Diverged {
			t.Errorf("the changed db is not reported as diverged: %+v", m)
		}
		if len(r.Divergence) != 1 || !strings.Contains(r.Divergence[0], "at revision 11") {
			t.Errorf("divergence %v, want one at revision 11", r.Divergence)
		}
		if r.Best == nil || r.Best.Dir != copies[1-best] {
			t.Errorf("best %+v, want %s", r.Best, copies[1-best])
		}
		out := runDiagnose(t, copies...).stdout
		for _, want := range []string{"DIVERGED from the others", "the dbs differ at revision 11", "its db diverged from the others"} {
			if !strings.Contains(out, want) {
				t.Errorf("human output lacks %q:\n%s", want, out)
			}
		}
	})
}

// checkRestore runs the commands diagnose prints, with cairn, and checks
// that the restored dirs hold the best member's revision.
func checkRestore(t *testing.T, dirs []string) {
	t.Helper()
	work := t.TempDir()
	r := diagnoseJSON(t, append([]string{"--restore-data-dir", filepath.Join(work, "{name}")}, dirs...)...)
	if len(r.Restores) != 3 {
		t.Fatalf("restores %+v, want 3", r.Restores)
	}
	script := strings.Join(r.RestoreSteps, "\n")
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(cairnBin(t))+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the restore commands failed: %v\n%s\nscript:\n%s", err, out, script)
	}
	var restored []string
	for _, s := range r.Restores {
		restored = append(restored, s.DataDir)
	}
	after := diagnoseJSON(t, restored...)
	for _, m := range after.Members {
		if m.Revision != revAtEnd || !m.WAL.Healthy {
			t.Errorf("restored %s: revision %d, wal %+v; want revision %d, healthy", m.Dir, m.Revision, m.WAL, revAtEnd)
		}
	}
}

func indexOf(dirs []string, dir string) int {
	for i, d := range dirs {
		if d == dir {
			return i
		}
	}
	return -1
}
