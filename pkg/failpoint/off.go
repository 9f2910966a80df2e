//go:build !failpoints

package failpoint

// Enabled reports whether this binary was built with the failpoints tag.
const Enabled = false

// Hit marks a crash point; without the failpoints build tag it does nothing
// and is inlined away.
func Hit(string) {}
