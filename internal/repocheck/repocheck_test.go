package repocheck

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// thisFile names the paths that TestNoPathOutsideRepository looks for, so
// that test does not read it.
const thisFile = "internal/repocheck/repocheck_test.go"

// outsideRefs are paths outside the repository that its files must not
// name: the folder that once stood beside it with the tools, the design
// notes and the test fixtures, and the absolute folder it was checked out
// in. A clone alone must build, test and read as a whole.
var outsideRefs = []string{"../shared", "/work/", "shared/tools", "shared/DESIGN", "shared/fixtures"}

// climbs find the relative paths, in Go files and in Markdown links, that
// start by going up ("../", "../../"): the folder a Go test runs in, and
// the one a Markdown link is taken from, is the file's own, so a path that
// goes up more folders than the file is deep leaves the repository. (In
// scripts and in the commands of documents, paths are taken from where the
// command runs, often the root: only outsideRefs are looked for there.)
var climbs = map[string]*regexp.Regexp{
	".go": regexp.MustCompile(`(?:^|[^\w.$}/-])((?:\.\./)+)`), // not the end of a longer path ("a/../b")
	".md": regexp.MustCompile(`\]\(((?:\.\./)+)`),
}

// TestNoPathOutsideRepository checks that no file of the repository refers
// to a path outside it: none of outsideRefs, and in Go files and Markdown
// links no relative path that climbs above the repository's root.
func TestNoPathOutsideRepository(t *testing.T) {
	for _, f := range repoFiles(t) {
		if f.path == thisFile {
			continue
		}
		depth := 0
		if dir := path.Dir(f.path); dir != "." {
			depth = strings.Count(dir, "/") + 1
		}
		climb := climbs[path.Ext(f.path)]
		for i, line := range f.lines {
			var found []string
			for _, ref := range outsideRefs {
				if strings.Contains(line, ref) {
					found = append(found, ref)
				}
			}
			if climb != nil {
				for _, m := range climb.FindAllStringSubmatch(line, -1) {
					if strings.Count(m[1], "../") > depth {
						found = append(found, m[1]+" (above the root from "+path.Dir(f.path)+")")
					}
				}
			}
			if len(found) > 0 {
				t.Errorf("%s:%d: names a path outside the repository, %s: %s", f.path, i+1, strings.Join(found, ", "), excerpt(line))
			}
		}
	}
}

// diaryWord finds a numbered work session or issue ("session" or "issue",
// maybe plural, then a number, maybe after a space or a '#').
var diaryWord = regexp.MustCompile(`(?i)\b(session|issue)s? ?#?\d+`)

// upstreamBefore matches the text before a diaryWord that names, in its
// last few words, a project cairn is compatible with or built on: "etcd
// issue" followed by a number is a fact about etcd, not about this work.
var upstreamBefore = regexp.MustCompile(`(?i)\b(etcd|raft|bbolt|grpc|kubernetes)('s)?\W+([\w.-]+\W+){0,3}$`)

// scenarioName matches the names etcd's robustness suite gives its
// regression scenarios: "Issue" and the number of the etcd issue, one word.
var scenarioName = regexp.MustCompile(`^Issue\d`)

// TestNoWorkDiaryWording checks that no file of the repository numbers a
// session or an issue of the work on it: the files speak of the product
// (releases, dates, commits). A numbered issue stays allowed where it is
// one of another project's (see upstreamBefore and scenarioName) or part
// of a URL.
func TestNoWorkDiaryWording(t *testing.T) {
	for _, f := range repoFiles(t) {
		for i, line := range f.lines {
			for _, loc := range diaryWord.FindAllStringIndex(line, -1) {
				before, word := line[:loc[0]], line[loc[0]:loc[1]]
				if upstreamBefore.MatchString(before) || scenarioName.MatchString(word) || inURL(before) {
					continue
				}
				t.Errorf("%s:%d: %q speaks of the work, not the product: %s", f.path, i+1, word, excerpt(line))
			}
		}
	}
}

// inURL says whether text that ends where a match starts ends inside a URL.
func inURL(before string) bool {
	word := before[strings.LastIndexAny(before, " \t\"'(<[`")+1:]
	return strings.Contains(word, "://")
}

// excerpt is a line trimmed for a message.
func excerpt(line string) string {
	line = strings.TrimSpace(line)
	if len(line) > 160 {
		line = line[:160] + "..."
	}
	return line
}

// repoFile is a text file of the repository, its path relative to the root
// with slashes.
type repoFile struct {
	path  string
	lines []string
}

// repoFiles returns the text files of the repository: those git tracks and
// the new ones it does not ignore, without binary files (a NUL byte in the
// first 8000 bytes, as git decides) and without files deleted but not yet
// committed.
func repoFiles(t *testing.T) []repoFile {
	t.Helper()
	root := repoRoot(t)
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("cannot list the repository's files with git (not a git checkout, or no git): %v", err)
	}
	paths := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	slices.Sort(paths)
	paths = slices.Compact(paths)
	var files []repoFile
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
			continue
		}
		files = append(files, repoFile{p, strings.Split(string(b), "\n")})
	}
	if len(files) == 0 {
		t.Fatal("git lists no file in the repository")
	}
	return files
}

// repoRoot walks up from the test's folder to the one with go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			t.Fatal("no go.mod above the test's folder")
		}
		d = parent
	}
}
