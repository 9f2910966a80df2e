package doccheck

import (
	"regexp"
	"strings"
)

// An example's output is checked loosely: what changes from run to run
// (IDs, revisions, ports, sizes, durations) and how wide a table is drawn
// must not fail it, a missing line or another word must.
var (
	// ruleRE is a run of the characters tables are drawn with.
	ruleRE  = regexp.MustCompile(`[-─━═]{2,}`)
	spaceRE = regexp.MustCompile(`\s+`)
	// valueRE is a number, a hexadecimal ID or a duration, standing alone.
	valueRE = regexp.MustCompile(`\b[0-9a-f]*[0-9][0-9a-f]*(?:\.[0-9]+)*(?:ns|µs|us|ms|s|m|h|%)?\b`)
)

// valuePattern matches any value valueRE finds.
const valuePattern = `[0-9a-f]+(?:\.[0-9]+)*[a-zµ%]*`

// normalize makes two printings of one table or line comparable.
func normalize(line string) string {
	line = ruleRE.ReplaceAllString(line, "-")
	return strings.TrimSpace(spaceRE.ReplaceAllString(line, " "))
}

// linePattern is the regexp an expected line becomes: its values match any
// value, the rest matches itself, and a line that ends in "..." matches the
// lines that begin with what comes before.
func linePattern(want string) *regexp.Regexp {
	want = normalize(want)
	prefix := strings.HasSuffix(want, "...")
	want = strings.TrimSuffix(want, "...")
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, loc := range valueRE.FindAllStringIndex(want, -1) {
		b.WriteString(regexp.QuoteMeta(want[last:loc[0]]))
		b.WriteString(valuePattern)
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(want[last:]))
	if !prefix {
		b.WriteString("$")
	}
	return regexp.MustCompile(b.String())
}

// missingLine returns the first expected line that got does not have, and
// true. Each line of got stands for one expected line at most, in any order
// (members and endpoints are listed in the order of their IDs, which change
// from run to run); blank lines and "..." (lines left out) are not expected.
func missingLine(want []string, got string) (string, bool) {
	gotLines := strings.Split(got, "\n")
	for i := range gotLines {
		gotLines[i] = normalize(gotLines[i])
	}
	used := make([]bool, len(gotLines))
	for _, w := range want {
		if strings.TrimSpace(w) == "" || strings.TrimSpace(w) == "..." {
			continue
		}
		re := linePattern(w)
		found := false
		for i, g := range gotLines {
			if !used[i] && re.MatchString(g) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			return w, true
		}
	}
	return "", false
}
