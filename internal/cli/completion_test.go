package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/internal/cli"
	"github.com/cairnkv/cairn/internal/client/clienttest"
)

// sourceRoot is the folder of go.mod above the test's directory.
func sourceRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// TestGeneratedDocsAreFresh fails when completions/ or man/ differ from
// what the command tree generates: run `go generate ./...` after changing
// commands, flags or help texts.
func TestGeneratedDocsAreFresh(t *testing.T) {
	root := sourceRoot(t)
	want, err := cli.Docs()
	if err != nil {
		t.Fatal(err)
	}
	for rel, data := range want {
		got, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s is missing or stale: run `go generate ./...`", rel)
		}
	}
	for _, dir := range []string{"completions", "man"} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatalf("%v: run `go generate ./...`", err)
		}
		for _, e := range entries {
			if _, ok := want[filepath.Join(dir, e.Name())]; !ok {
				t.Errorf("%s/%s is not generated any more: run `go generate ./...`", dir, e.Name())
			}
		}
	}
	var pages []string
	for rel := range want {
		if strings.HasPrefix(rel, "man"+string(filepath.Separator)) {
			pages = append(pages, filepath.Base(rel))
		}
	}
	for _, page := range []string{"cairn.1", "cairn-get.1", "cairn-lease-grant.1", "cairn-bench-put.1", "cairn-lock.1"} {
		if !slices.Contains(pages, page) {
			t.Errorf("no man page %s among %d", page, len(pages))
		}
	}
}

func TestCompletionCommand(t *testing.T) {
	cairn := clienttest.CairnBinary(t)
	for shell, marker := range map[string]string{
		"bash": "__start_cairn", "zsh": "#compdef cairn", "fish": "complete -c cairn", "powershell": "Register-ArgumentCompleter",
	} {
		out, err := exec.Command(cairn, "completion", shell).Output()
		if err != nil || !strings.Contains(string(out), marker) {
			t.Errorf("completion %s: %v, output lacks %q", shell, err, marker)
		}
	}
	out, err := exec.Command(cairn, "completion", "tcsh").CombinedOutput()
	if err == nil || !strings.HasPrefix(string(out), "Error: ") {
		t.Errorf("completion for an unknown shell: %v, %q", err, out)
	}
}
