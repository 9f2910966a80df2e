package failpoint

import (
	"maps"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want map[string]Action
	}{
		{"", map[string]Action{}},
		{"walBeforeFsync=crash", map[string]Action{"walBeforeFsync": {At: 1}}},
		{"a=crash@3; b=crash ,c=crash@1;", map[string]Action{"a": {At: 3}, "b": {At: 1}, "c": {At: 1}}},
		{"w=sleep(100ms)", map[string]Action{"w": {Sleep: 100 * time.Millisecond}}},
		{"w=sleep(1s)@4;x=crash", map[string]Action{"w": {Sleep: time.Second, At: 4}, "x": {At: 1}}},
		{"w=20*sleep(5ms)", map[string]Action{"w": {Sleep: 5 * time.Millisecond, Count: 20}}},
	} {
		got, err := Parse(tc.spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.spec, err)
			continue
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("Parse(%q) = %v, want %v", tc.spec, got, tc.want)
		}
	}
	for _, bad := range []string{"a", "=crash", "a=panic", "a=crash@0", "a=crash@x", "a=crash@-1",
		"a=sleep", "a=sleep()", "a=sleep(100)", "a=sleep(-1s)", "a=sleep(1s", "a=sleep(1s)@0",
		"a=0*sleep(1s)", "a=x*sleep(1s)", "a=2*crash", "a=2*sleep(1s)@3"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}

func TestActs(t *testing.T) {
	for _, tc := range []struct {
		a    Action
		want string // hits 1..5, x where the point acts
	}{
		{Action{At: 1}, "x...."},
		{Action{At: 3}, "..x.."},
		{Action{Sleep: time.Millisecond}, "xxxxx"},
		{Action{Sleep: time.Millisecond, At: 2}, ".x..."},
		{Action{Sleep: time.Millisecond, Count: 2}, "xx..."},
	} {
		got := ""
		for n := int64(1); n <= 5; n++ {
			if tc.a.acts(n) {
				got += "x"
			} else {
				got += "."
			}
		}
		if got != tc.want {
			t.Errorf("%v acts at %s, want %s", tc.a, got, tc.want)
		}
	}
}
