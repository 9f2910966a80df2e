//go:build !failpoints

package failpoint

import "testing"

// TestOffIgnoresEnv: without the build tag an armed point does nothing.
func TestOffIgnoresEnv(t *testing.T) {
	t.Setenv(EnvVar, "p=crash")
	Hit("p")
	if Enabled {
		t.Fatal("Enabled in a build without the failpoints tag")
	}
}

// BenchmarkHit shows that a point costs nothing in a normal build: the call
// is inlined away (compare with BenchmarkEmpty; or build with
// -gcflags=-m and look for "inlining call to failpoint.Hit").
func BenchmarkHit(b *testing.B) {
	for b.Loop() {
		Hit("walBeforeFsync")
	}
}

func BenchmarkEmpty(b *testing.B) {
	for b.Loop() {
	}
}
