package forensics

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// migrateOutcome is what a run of migrate shows: its exit code, its error
// line, and the messages and fields of its log lines (without time and
// caller, and with zap's spacing of the fields removed).
type migrateOutcome struct {
	code  int
	lines []string
}

var logLine = regexp.MustCompile(`^\S+\t(\w+)\t\S+\t([^\t]+)\t?(.*)$`)

func outcomeOf(code int, stderr string) migrateOutcome {
	o := migrateOutcome{code: code}
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		switch m := logLine.FindStringSubmatch(l); {
		case strings.HasPrefix(l, "Error: "):
			o.lines = append(o.lines, l)
		case m != nil && !strings.Contains(l, "bbolt"):
			o.lines = append(o.lines, m[1]+" "+m[2]+" "+strings.ReplaceAll(m[3], `": "`, `":"`))
		}
	}
	return o
}

// TestMigrateAsEtcdutl runs the same migrations with cairn and with etcd
// 3.7.3's etcdutl, each on its copy of etcd's data dir (testdata), and
// compares what they say, their exit codes and the dbs they leave.
func TestMigrateAsEtcdutl(t *testing.T) {
	etcdutl := etcdref.Bin(t, "etcdutl")
	ours, theirs := filepath.Join(copyFixture(t), "data"), filepath.Join(copyFixture(t), "data")
	for _, args := range [][]string{
		{"--target-version", "3.7"}, // up to date
		{"--target-version", "3.6"},
		{"--target-version", "3.5"},
		{"--target-version", "3.5"},
		{"--target-version", "3.7"},
		{"--target-version", "3.8"},
		{"--target-version", "3.4"},
		{"--target-version", "3"},
		{"--target-version", "3.6.1"},
		{"--data-dir-missing", "3.6"},
	} {
		run := func(tool, dir string) migrateOutcome {
			full := append([]string{"migrate", "--data-dir", dir}, args...)
			if args[0] == "--data-dir-missing" {
				full = []string{"migrate", "--data-dir", filepath.Join(dir, "none"), "--target-version", args[1]}
			}
			if tool == "cairn" {
				r := runCairn(t, full...)
				return outcomeOf(r.code, strings.ReplaceAll(r.stderr, filepath.Join(dir, "none"), "DIR"))
			}
			var stderr bytes.Buffer
			cmd := exec.Command(etcdutl, full...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			return outcomeOf(code, strings.ReplaceAll(stderr.String(), filepath.Join(dir, "none"), "DIR"))
		}
		got, want := run("cairn", ours), run("etcdutl", theirs)
		if got.code != want.code || strings.Join(got.lines, "\n") != strings.Join(want.lines, "\n") {
			t.Errorf("migrate %v:\ncairn (exit %d):\n%s\netcdutl (exit %d):\n%s", args, got.code, strings.Join(got.lines, "\n"),
				want.code, strings.Join(want.lines, "\n"))
		}
		if a, b := mustRun(t, "dump-db", "iterate-bucket", ours, "meta"), mustRun(t, "dump-db", "iterate-bucket", theirs, "meta"); a != b {
			t.Errorf("after migrate %v, the meta bucket:\ncairn:\n%s\netcdutl:\n%s", args, a, b)
		}
	}
}

// TestMigrateRefusesWALNewerThanTarget: a WAL entry that etcd's API marks
// as of 3.6 (here the test request that stands for one) makes a migration
// to 3.5 fail, as etcdutl's does, unless forced.
func TestMigrateRefusesWALNewerThanTarget(t *testing.T) {
	dir := filepath.Join(copyFixture(t), "data")
	appendEntry(t, dir, &etcdserverpb.InternalRaftRequest{DowngradeVersionTest: &etcdserverpb.DowngradeVersionTestRequest{Ver: "3.6.0"}})
	appendEntry(t, dir, &etcdserverpb.InternalRaftRequest{ClusterVersionSet: &membershippb.ClusterVersionSetRequest{Ver: "3.7.0"}})
	want := "cannot downgrade storage, WAL contains newer entries, as the target version (3.5.0) is lower than the version (3.6.0) detected from WAL logs"
	mustRun(t, "migrate", "--data-dir", dir, "--target-version", "3.6") // 3.6 knows every entry
	mustFail(t, []string{want}, "migrate", "--data-dir", dir, "--target-version", "3.5")
	if r := runCairn(t, "migrate", "--data-dir", dir, "--target-version", "3.5", "--force"); r.code != 0 || !strings.Contains(r.stderr, `"new-storage-version":"3.5.0"`) {
		t.Errorf("--force: exit %d\n%s", r.code, r.stderr)
	}
	t.Run("etcdutl", func(t *testing.T) {
		etcdutl := etcdref.Bin(t, "etcdutl")
		etcdDir := filepath.Join(copyFixture(t), "data")
		copyTree(t, dir, etcdDir)
		exec.Command(etcdutl, "migrate", "--data-dir", etcdDir, "--target-version", "3.6", "--force").Run()
		out, err := exec.Command(etcdutl, "migrate", "--data-dir", etcdDir, "--target-version", "3.5").CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("etcdutl on the same WAL: %v\n%s", err, out)
		}
	})
}

// appendEntry appends req as the WAL's next entry, committed.
func appendEntry(t *testing.T, dataDir string, req *etcdserverpb.InternalRaftRequest) {
	t.Helper()
	w, res, err := walfmt.Open(walDir(dataDir), walfmt.Snapshot{}, walfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	data, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	last := res.Entries[len(res.Entries)-1]
	index, term := last.GetIndex()+1, last.GetTerm()
	hs := proto.Clone(res.HardState).(*raftpb.HardState)
	hs.Commit = &index
	if err := w.Save(hs, []*raftpb.Entry{{Term: &term, Index: &index, Type: raftpb.EntryType_EntryNormal.Enum(), Data: data}}); err != nil {
		t.Fatal(err)
	}
}
