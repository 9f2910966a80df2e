package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	linkRE    = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
)

// TestDocLinks checks that every relative link of README.md and docs/*.md
// leads to a file of the repository, and a #section to a heading of it.
func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	for _, file := range documents(t, root) {
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(text), "\n") {
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				if err := checkLink(root, file, m[1]); err != "" {
					t.Errorf("%s:%d: link %s: %s", file, i+1, m[1], err)
				}
			}
		}
	}
}

// checkLink returns what is wrong with a link of file, or "".
func checkLink(root, file, link string) string {
	if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
		return ""
	}
	target, anchor, _ := strings.Cut(link, "#")
	path := filepath.Join(root, file)
	if target != "" {
		path = filepath.Join(root, filepath.Dir(file), target)
		if rel, err := filepath.Rel(root, path); err != nil || strings.HasPrefix(rel, "..") {
			return "leads out of the repository"
		}
		if _, err := os.Stat(path); err != nil {
			return "no such file"
		}
	}
	if anchor == "" || !strings.HasSuffix(path, ".md") {
		return ""
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	for _, h := range headingRE.FindAllStringSubmatch(string(text), -1) {
		if slug(h[1]) == anchor {
			return ""
		}
	}
	return "no heading #" + anchor
}

// slug is the anchor GitHub gives a heading: lower case, punctuation
// dropped, spaces made hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestReadmeTestCommandIsCI checks that the test command the README gives
// is the one .ci/run runs, word for word.
func TestReadmeTestCommandIsCI(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, errs := extract(string(readme))
	if len(errs) > 0 {
		t.Fatalf("README.md: %v", errs)
	}
	var readmeCmd string
	for _, b := range blocks {
		for _, ex := range b.examples {
			if readmeCmd == "" && strings.HasPrefix(ex.cmd, "go test ") {
				readmeCmd = strings.TrimSpace(strings.SplitN(ex.cmd, "#", 2)[0])
			}
		}
	}
	if readmeCmd == "" {
		t.Fatal("README.md gives no `go test` command")
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(ci), "\n") {
		if strings.TrimSpace(line) == readmeCmd {
			return
		}
	}
	t.Errorf("README.md's test command %q is not a line of .ci/run", readmeCmd)
}
