package keyrange

import (
	"bytes"
	"testing"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
)

func TestPrefixEnd(t *testing.T) {
	tests := []struct{ prefix, want string }{
		{"a", "b"},
		{"/jobs/", "/jobs0"},
		{"a\xff", "b"},
		{"\xff\xff", "\x00"},
	}
	for _, tt := range tests {
		if got := PrefixEnd([]byte(tt.prefix)); !bytes.Equal(got, []byte(tt.want)) {
			t.Errorf("PrefixEnd(%q) = %q, want %q", tt.prefix, got, tt.want)
		}
	}
}

func TestKeyRange(t *testing.T) {
	tests := []struct {
		args            []string
		prefix, fromKey bool
		key, end        string
	}{
		{[]string{"a"}, false, false, "a", ""},
		{[]string{"a", "c"}, false, false, "a", "c"},
		{[]string{"a"}, true, false, "a", "b"},
		{[]string{""}, true, false, "\x00", "\x00"},
		{[]string{"a"}, false, true, "a", "\x00"},
		{[]string{""}, false, true, "\x00", "\x00"},
	}
	for _, tt := range tests {
		key, end, err := Parse("get", tt.args, tt.prefix, tt.fromKey)
		if err != nil || string(key) != tt.key || string(end) != tt.end {
			t.Errorf("Parse(%q, prefix %v, from-key %v) = %q, %q, %v; want %q, %q",
				tt.args, tt.prefix, tt.fromKey, key, end, err, tt.key, tt.end)
		}
	}
	for _, bad := range [][]string{nil, {"a", "b", "c"}} {
		if _, _, err := Parse("get", bad, false, false); cmderr.ExitCode(err) != cmderr.ExitBadArgs {
			t.Errorf("Parse(%q): error %v, want a bad-arguments error", bad, err)
		}
	}
}
