package robustness

import (
	"slices"
	"testing"
	"time"
)

func TestScheduleFollowsTheSeedAndPutsUncoveredKindsFirst(t *testing.T) {
	a := schedule(7, allFaults, nil, 60*time.Second)
	b := schedule(7, allFaults, nil, 60*time.Second)
	if !slices.Equal(a, b) {
		t.Fatalf("two schedules of seed 7 differ:\n%v\n%v", a, b)
	}
	if slices.Equal(a, schedule(8, allFaults, nil, 60*time.Second)) {
		t.Fatal("seeds 7 and 8 give the same schedule")
	}
	seen := map[faultKind]bool{}
	for i, f := range a {
		seen[f.Kind] = true
		if i > 0 && f.At < a[i-1].At+a[i-1].Hold {
			t.Fatalf("fault %d starts at %v, before fault %d ends", i, f.At, i-1)
		}
		if f.At+f.Hold > 60*time.Second {
			t.Fatalf("fault %d ends past the window", i)
		}
	}
	if len(seen) != len(allFaults) {
		t.Fatalf("60 s cover %v only", seen)
	}
	first := []faultKind{faultDelay, faultDrop}
	if s := schedule(7, allFaults, first, 20*time.Second); len(s) < 2 || s[0].Kind != faultDelay || s[1].Kind != faultDrop {
		t.Fatalf("the uncovered kinds do not come first: %v", s)
	}
}
