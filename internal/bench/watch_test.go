package bench

import (
	"bytes"
	"testing"
)

func TestPrefixRangeEnd(t *testing.T) {
	for _, c := range []struct{ prefix, want string }{
		{"a", "b"},
		{"/bench/", "/bench0"},
		{"a\xff", "b"},
		{"a\xff\xff", "b"},
		{"\xff\xff", "\x00"},
	} {
		if got := prefixRangeEnd([]byte(c.prefix)); !bytes.Equal(got, []byte(c.want)) {
			t.Errorf("prefixRangeEnd(%q) = %q, want %q", c.prefix, got, c.want)
		}
	}
}
