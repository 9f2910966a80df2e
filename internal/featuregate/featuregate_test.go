package featuregate

import (
	"strings"
	"testing"
)

// TestParseFeatures: etcd's gate names and defaults, and its errors for an
// unknown gate, a missing value and a value that is not a bool.
func TestParseFeatures(t *testing.T) {
	f, err := Parse("InitialCorruptCheck=true, CompactHashCheck=false")
	if err != nil {
		t.Fatal(err)
	}
	if !f.Enabled(InitialCorruptCheck) || f.Enabled(CompactHashCheck) || !f.Enabled("TxnModeWriteWithSharedBuffer") {
		t.Errorf("gates %v", f)
	}
	for in, want := range map[string]string{
		"Foo=true":                  "unrecognized feature gate: Foo",
		"InitialCorruptCheck":       "missing bool value for InitialCorruptCheck",
		"InitialCorruptCheck=maybe": `invalid value of InitialCorruptCheck=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax`,
	} {
		if _, err := Parse(in); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// TestCairnFeatures: cairn's own gates are off by default, parse as
// etcd's do, and --help says they are cairn's.
func TestCairnFeatures(t *testing.T) {
	for _, name := range []string{AutoPromoteLearners, LearnerLinearizableReads} {
		if (Gates{}).Enabled(name) {
			t.Errorf("%s on by default", name)
		}
		f, err := Parse(name + "=true")
		if err != nil || !f.Enabled(name) {
			t.Errorf("%s=true: %v, %v", name, f, err)
		}
		if want := "\n" + name + "=true|false (default=false) (cairn's own, not in etcd)"; !strings.Contains(Help(), want) {
			t.Errorf("help has no %q:\n%s", want, Help())
		}
	}
	if strings.Contains(Help(), "InitialCorruptCheck=true|false (default=false) (cairn") {
		t.Error("an etcd gate marked as cairn's")
	}
}
