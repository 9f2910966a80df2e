// Package envdefault gives the default of a test flag from an environment
// variable, so that a long run can be shaped by `go test` flags or by
// variables (which reach the tests of several packages at once).
package envdefault

import (
	"os"
	"strconv"
	"time"
)

// String is the value of the variable name, or def where it is unset or empty.
func String(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Int is the variable name as an integer, or def where it is unset or not one.
func Int(name string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil {
		return v
	}
	return def
}

// Duration is the variable name as a Go duration ("20s"), or def where it is
// unset or not one.
func Duration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return v
	}
	return def
}
