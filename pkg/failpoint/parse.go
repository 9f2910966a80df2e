package failpoint

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Action is what an armed point does.
type Action struct {
	// Sleep is how long a hit sleeps; 0 means the point crashes.
	Sleep time.Duration
	// At is the one hit the point acts at (counting from 1); 0: every hit
	// (a sleep only), or the first Count.
	At int64
	// Count limits a sleep to the first Count hits (0: no limit).
	Count int64
}

// acts reports whether the point acts at hit number n.
func (a Action) acts(n int64) bool {
	switch {
	case a.At != 0:
		return n == a.At
	case a.Count != 0:
		return n <= a.Count
	}
	return true
}

func (a Action) String() string {
	what := "crash"
	if a.Sleep != 0 {
		what = "sleep " + a.Sleep.String()
	}
	switch {
	case a.At != 0:
		return fmt.Sprintf("%s at hit %d", what, a.At)
	case a.Count != 0:
		return fmt.Sprintf("%s at the first %d hits", what, a.Count)
	}
	return what + " at every hit"
}

const syntax = "want name=crash, crash@N, sleep(DURATION), sleep(DURATION)@N or N*sleep(DURATION)"

// Parse reads a CAIRN_FAILPOINTS value into the action of each named point.
func Parse(spec string) (map[string]Action, error) {
	out := map[string]Action{}
	for _, term := range strings.FieldsFunc(spec, func(r rune) bool { return r == ';' || r == ',' }) {
		term = strings.TrimSpace(term)
		if term == "" {
			continue
		}
		name, action, ok := strings.Cut(term, "=")
		name, action = strings.TrimSpace(name), strings.TrimSpace(action)
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: %s", term, syntax)
		}
		a, err := parseAction(action)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", term, err)
		}
		out[name] = a
	}
	return out, nil
}

func parseAction(s string) (Action, error) {
	var a Action
	count, rest, hasCount := strings.Cut(s, "*")
	if !hasCount {
		rest = s
	}
	rest, at, hasAt := strings.Cut(rest, "@")
	whole := func(v string) (int64, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("%q: the hit number or count must be a whole number from 1", v)
		}
		return n, nil
	}
	var err error
	switch d, isSleep := strings.CutPrefix(rest, "sleep("); {
	case rest == "crash":
		a.At = 1
		if hasCount {
			return Action{}, fmt.Errorf("a count applies to sleep only (%s)", syntax)
		}
	case isSleep && strings.HasSuffix(d, ")"):
		if a.Sleep, err = time.ParseDuration(strings.TrimSuffix(d, ")")); err != nil || a.Sleep <= 0 {
			return Action{}, fmt.Errorf("sleep: want a positive duration such as 100ms, got %q", strings.TrimSuffix(d, ")"))
		}
		if hasCount && hasAt {
			return Action{}, fmt.Errorf("a count and a hit number together (%s)", syntax)
		}
	default:
		return Action{}, fmt.Errorf("unknown action %q (%s)", s, syntax)
	}
	if hasAt {
		if a.At, err = whole(at); err != nil {
			return Action{}, err
		}
	}
	if hasCount {
		if a.Count, err = whole(count); err != nil {
			return Action{}, err
		}
	}
	return a, nil
}
