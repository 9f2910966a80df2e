package failpoint

import (
	"maps"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want map[string]int64
	}{
		{"", map[string]int64{}},
		{"walBeforeFsync=crash", map[string]int64{"walBeforeFsync": 1}},
		{"a=crash@3; b=crash ,c=crash@1;", map[string]int64{"a": 3, "b": 1, "c": 1}},
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
	for _, bad := range []string{"a", "=crash", "a=panic", "a=crash@0", "a=crash@x", "a=crash@-1"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}
