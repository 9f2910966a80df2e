package version

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Minor is the major and minor number of a version: what cluster versions,
// storage versions and downgrade targets are compared by.
type Minor struct {
	Major, Minor int64
}

// String is the form etcd reports cluster versions in: "3.7".
func (v Minor) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Full is the form etcd stores versions in: "3.7.0".
func (v Minor) Full() string { return fmt.Sprintf("%d.%d.0", v.Major, v.Minor) }

// Less reports whether v is an older minor version than w.
func (v Minor) Less(w Minor) bool {
	return v.Major < w.Major || v.Major == w.Major && v.Minor < w.Minor
}

// ErrVersionFormat is returned by ParseMinor for what is not a version.
var ErrVersionFormat = errors.New("not a version")

// semverIdentifiers are the dot-separated identifiers of a pre-release or
// build suffix.
var semverIdentifiers = regexp.MustCompile(`^[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*$`)

// ParseMinor reads "MAJOR.MINOR" or a semantic version
// "MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]", as etcd 3.7 accepts a downgrade
// target: numbers of decimal digits only (leading zeros allowed) that fit
// in an int64; suffixes, possibly empty, made of identifiers of letters,
// digits and '-', separated by single dots.
func ParseMinor(s string) (Minor, error) {
	if parts := strings.Split(s, "."); len(parts) == 2 {
		return parseNumbers(s, parts)
	}
	core, build, _ := strings.Cut(s, "+")
	core, pre, _ := strings.Cut(core, "-")
	for _, suffix := range []string{pre, build} {
		if suffix != "" && !semverIdentifiers.MatchString(suffix) {
			return Minor{}, fmt.Errorf("%w: %q", ErrVersionFormat, s)
		}
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return Minor{}, fmt.Errorf("%w: %q", ErrVersionFormat, s)
	}
	return parseNumbers(s, parts)
}

// parseNumbers reads the numbers of version s, split into parts, and keeps
// the first two.
func parseNumbers(s string, parts []string) (Minor, error) {
	nums := make([]int64, len(parts))
	for i, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return Minor{}, fmt.Errorf("%w: %q", ErrVersionFormat, s)
		}
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return Minor{}, fmt.Errorf("%w: %q", ErrVersionFormat, s)
		}
		nums[i] = n
	}
	return Minor{Major: nums[0], Minor: nums[1]}, nil
}
