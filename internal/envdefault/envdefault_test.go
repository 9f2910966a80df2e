package envdefault

import (
	"testing"
	"time"
)

func TestDefaultsAndValues(t *testing.T) {
	t.Setenv("ENVDEFAULT_S", "x")
	t.Setenv("ENVDEFAULT_I", "42")
	t.Setenv("ENVDEFAULT_D", "3s")
	t.Setenv("ENVDEFAULT_BAD", "not a number")
	if got := String("ENVDEFAULT_S", "d"); got != "x" {
		t.Errorf("String set = %q, want x", got)
	}
	if got := String("ENVDEFAULT_UNSET", "d"); got != "d" {
		t.Errorf("String unset = %q, want d", got)
	}
	if got := Int("ENVDEFAULT_I", 7); got != 42 {
		t.Errorf("Int set = %d, want 42", got)
	}
	if got := Int("ENVDEFAULT_BAD", 7); got != 7 {
		t.Errorf("Int bad = %d, want the default 7", got)
	}
	if got := Duration("ENVDEFAULT_D", time.Second); got != 3*time.Second {
		t.Errorf("Duration set = %v, want 3s", got)
	}
	if got := Duration("ENVDEFAULT_BAD", time.Second); got != time.Second {
		t.Errorf("Duration bad = %v, want the default 1s", got)
	}
}
