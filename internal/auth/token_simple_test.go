package auth

import (
	"regexp"
	"testing"
)

func TestTokenPrefixAndIndex(t *testing.T) {
	letters := regexp.MustCompile(`^[a-zA-Z]{16}$`)
	seen := map[string]bool{}
	for range 100 {
		p, err := NewTokenPrefix()
		if err != nil || !letters.MatchString(p) || seen[p] {
			t.Fatalf("prefix %q %v (repeated: %v)", p, err, seen[p])
		}
		seen[p] = true
	}
	for tok, want := range map[string]bool{
		"abcdefghijklmnop.12": true, "abcdefghijklmnop": false, "abc.12": false,
		"abcdefghijklmnop.x": false, "abcdefghijklmnop.-1": false, "": false,
	} {
		if _, ok := TokenIndex(tok); ok != want {
			t.Errorf("TokenIndex(%q) ok %v, want %v", tok, ok, want)
		}
	}
}
