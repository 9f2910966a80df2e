package version

import (
	"errors"
	"testing"
)

// TestParseMinorAsEtcd: the downgrade targets etcd 3.7.3 accepted and
// refused ("wrong downgrade target version format") when asked to validate
// them, observed one by one.
func TestParseMinorAsEtcd(t *testing.T) {
	accepted := map[string]Minor{
		"3.6": {3, 6}, "3.6.0": {3, 6}, "3.6.5": {3, 6}, "3.06": {3, 6}, "03.6": {3, 6}, "3.6.00": {3, 6},
		"3.7.0": {3, 7}, "4.6": {4, 6}, "2.6": {2, 6}, "3.5": {3, 5},
		"3.6.0-alpha.0": {3, 6}, "3.6.0+x": {3, 6}, "3.6.0-rc": {3, 6}, "3.6.0+": {3, 6}, "3.6.0-": {3, 6},
		"3.6.0-rc.1+b.2": {3, 6}, "3.6.0-0": {3, 6}, "3.6.0-01": {3, 6}, "3.6.0--x": {3, 6}, "3.6.0-x-": {3, 6},
		"3.6.5-rc+meta": {3, 6}, "3.6.0-a+b-c": {3, 6}, "3.6.0+b-c": {3, 6}, "3.6.0-+": {3, 6}, "3.6.0+-": {3, 6},
		"3.6.9223372036854775807": {3, 6}, "3.06.5-rc+x": {3, 6},
	}
	for s, want := range accepted {
		got, err := ParseMinor(s)
		if err != nil || got != want {
			t.Errorf("ParseMinor(%q) = %v, %v; etcd reads %v", s, got, err, want)
		}
	}
	refused := []string{
		"", "3", "3.6.x", " 3.6", "3.6.0 ", "3.6.0.0", "-1", "3.-1", "3.-1.0", "v3.6", "v3.6.0", "foo",
		"3.6-rc", "3.6+meta", "3.6-", "3.6+", "3.6.0-a_b", "+3.6", "3.+6", "3.6.+5", "-3.6", "3.6.-5", "3.6.-0",
		"3.6.99999999999999999999", "3.9223372036854775808", "3.6..0", "3..6", "3.6.", ".3.6", "3.6.0-rc..1",
		"0x3.6", "3.6.0-ä", "3.6.0+a+b", "3.6.0-a.+", "3.6.9223372036854775808",
	}
	for _, s := range refused {
		if got, err := ParseMinor(s); !errors.Is(err, ErrVersionFormat) {
			t.Errorf("ParseMinor(%q) = %v, %v; etcd refuses it", s, got, err)
		}
	}
}

func TestMinorForms(t *testing.T) {
	v := Minor{3, 6}
	if v.String() != "3.6" || v.Full() != "3.6.0" {
		t.Errorf("forms of 3.6: %q, %q", v.String(), v.Full())
	}
	if !v.Less(Minor{3, 7}) || !v.Less(Minor{4, 0}) || (Minor{3, 7}).Less(v) || v.Less(v) {
		t.Error("Less orders by major then minor")
	}
}

// FuzzParseMinor: any string a client sends as a downgrade target parses
// or fails without panicking, and what parses reads back the same from its
// stored form.
func FuzzParseMinor(f *testing.F) {
	for _, s := range []string{"3.6", "3.6.0-rc.1+b", "3.6.", "3.-1", "3.6.0+a+b", "9223372036854775807.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseMinor(s)
		if err != nil {
			return
		}
		if back, err := ParseMinor(v.Full()); err != nil || back != v {
			t.Errorf("ParseMinor(%q) = %v, whose form %q reads back as %v, %v", s, v, v.Full(), back, err)
		}
	})
}
