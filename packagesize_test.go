package cairn_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxPackageLines is the most lines of non-test Go a package may hold (the
// sum of `wc -l` of its .go files but the _test.go ones): a package past it
// does more than one job and is split.
const maxPackageLines = 4000

func TestPackageSize(t *testing.T) {
	for _, p := range listPackages(t) {
		if n := goLines(t, p.Dir); n > maxPackageLines {
			t.Errorf("%s has %d lines of non-test Go, more than %d: split it by job", rel(p.ImportPath), n, maxPackageLines)
		}
	}
}

// goLines is the number of lines of the non-test Go files in dir.
func goLines(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
	}
	return lines
}
