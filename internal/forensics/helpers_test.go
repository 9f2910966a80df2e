package forensics

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// fixtureDir is the real etcd 3.7.3 data directory fixture and the outputs
// of etcd's tools on it (see its README).
const fixtureDir = "../../testdata/etcd-3.7.3"

// fixtureFile returns the contents of a file of the fixture.
func fixtureFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readFile returns the contents of the file at path.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// copyFixture copies the fixture into a temporary directory, writable, and
// returns the copy's root: data/ is the data directory.
func copyFixture(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	copyTree(t, fixtureDir, dst)
	return dst
}

// copyTree copies the files under src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// copyFile copies the file src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// cairnResult is the outcome of one in-process cairn command.
type cairnResult struct {
	stdout, stderr string
	code           int
}

// newTestRoot is a cairn command tree with the commands of this package
// where internal/cli puts them: with the global --write-out flag, under
// snapshot, and extending an online defrag (a stand-in with its --cluster
// flag).
func newTestRoot() *cobra.Command {
	root := &cobra.Command{Use: "cairn", SilenceUsage: true, SilenceErrors: true}
	root.PersistentFlags().StringP("write-out", "w", printer.FormatSimple, "set the output format")
	snapshot := &cobra.Command{Use: "snapshot"}
	snapshot.AddCommand(SnapshotCommands()...)
	defrag := &cobra.Command{Use: "defrag", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error {
		return errors.New("the online defrag is not in this test")
	}}
	defrag.Flags().Bool("cluster", false, "defragment every member")
	AttachOfflineDefrag(defrag)
	root.AddCommand(Commands()...)
	root.AddCommand(snapshot, defrag)
	return root
}

// runCairn runs the command tree of newTestRoot in-process with args, and
// reports its error as cairn does.
func runCairn(t *testing.T, args ...string) cairnResult {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newTestRoot()
	root.SetArgs(args)
	root.SetIn(strings.NewReader(""))
	root.SetOut(&out)
	root.SetErr(&errOut)
	code := 0
	if err := root.Execute(); err != nil {
		code = cmderr.Report(&errOut, err)
	}
	return cairnResult{stdout: out.String(), stderr: errOut.String(), code: code}
}

// mustRun runs cairn and fails the test unless it succeeds.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	r := runCairn(t, args...)
	if r.code != 0 {
		t.Fatalf("cairn %s: exit %d\nstderr: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// mustFail runs cairn, expects a non-zero exit with a one-line error on
// stderr containing every one of wants, and returns that line.
func mustFail(t *testing.T, wants []string, args ...string) string {
	t.Helper()
	r := runCairn(t, args...)
	if r.code == 0 {
		t.Fatalf("cairn %s succeeded, want an error\nstdout: %s", strings.Join(args, " "), r.stdout)
	}
	line := strings.TrimSuffix(r.stderr, "\n")
	if line == "" || strings.Contains(line, "\n") || !strings.HasPrefix(line, "Error: ") {
		t.Fatalf("cairn %s: want one error line on stderr, got %q", strings.Join(args, " "), r.stderr)
	}
	for _, w := range wants {
		if !strings.Contains(line, w) {
			t.Errorf("cairn %s: error %q does not say %q", strings.Join(args, " "), line, w)
		}
	}
	return line
}

// treeDigest hashes the names, modes, sizes and contents of every file
// under dir, to check that a command wrote nothing.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h.Write([]byte(rel + "|" + info.Mode().String() + "|" + info.ModTime().String() + "\n"))
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
