package server

import "testing"

// TestParseFeatures: etcd's gate names and defaults, and its errors for an
// unknown gate, a missing value and a value that is not a bool.
func TestParseFeatures(t *testing.T) {
	f, err := ParseFeatures("InitialCorruptCheck=true, CompactHashCheck=false")
	if err != nil {
		t.Fatal(err)
	}
	if !f.Enabled(FeatureInitialCorruptCheck) || f.Enabled(FeatureCompactHashCheck) || !f.Enabled("TxnModeWriteWithSharedBuffer") {
		t.Errorf("gates %v", f)
	}
	for in, want := range map[string]string{
		"Foo=true":                  "unrecognized feature gate: Foo",
		"InitialCorruptCheck":       "missing bool value for InitialCorruptCheck",
		"InitialCorruptCheck=maybe": `invalid value of InitialCorruptCheck=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax`,
	} {
		if _, err := ParseFeatures(in); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
