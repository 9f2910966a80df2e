package server

import (
	"testing"
	"time"
)

func TestIdleSpellIsDueOncePerQuietSpell(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	i := newIdleSpell(5, t0)
	steps := []struct {
		requests int64
		at       time.Duration
		want     bool
	}{
		{5, time.Second, false},                     // quiet, not for long enough
		{5, idleMemoryAfter, true},                  // quiet for idleMemoryAfter
		{5, 3 * idleMemoryAfter, false},             // told once per spell
		{6, 3*idleMemoryAfter + time.Second, false}, // a request ends the spell
		{6, 4*idleMemoryAfter + time.Second - 1, false},
		{6, 4*idleMemoryAfter + time.Second, true}, // a new spell
	}
	for n, st := range steps {
		if got := i.due(st.requests, at(st.at)); got != st.want {
			t.Fatalf("step %d (%d requests at +%s): due %v, want %v", n, st.requests, st.at, got, st.want)
		}
	}
}
