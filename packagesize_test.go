package cairn_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxPackageLines is the most lines of non-test Go a package may hold (the
// sum of `wc -l` of its .go files but the _test.go ones): a package past it
// does more than one job and is split.
const maxPackageLines = 4000

// oversizedPackages are the packages known to be past maxPackageLines
// (paths relative to the module). Each is to be split, and leaves this
// list then: the test fails for a package listed here that is within the
// limit.
var oversizedPackages = []string{
	// The member's core: 4,340 lines of non-test Go, until it is split.
	"internal/server",
}

func TestPackageSize(t *testing.T) {
	listed := map[string]bool{}
	for _, p := range listPackages(t) {
		path := rel(p.ImportPath)
		n := goLines(t, p.Dir)
		oversized := slices.Contains(oversizedPackages, path)
		listed[path] = true
		switch {
		case n > maxPackageLines && !oversized:
			t.Errorf("%s has %d lines of non-test Go, more than %d: split it by job", path, n, maxPackageLines)
		case n <= maxPackageLines && oversized:
			t.Errorf("%s has %d lines of non-test Go, within %d: take it out of oversizedPackages", path, n, maxPackageLines)
		}
	}
	for _, path := range oversizedPackages {
		if !listed[path] {
			t.Errorf("oversizedPackages names %s, which is not a package of the module", path)
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
