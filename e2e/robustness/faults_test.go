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

func TestParseFaultsDiskAlias(t *testing.T) {
	got, err := parseFaults("disk")
	if err != nil || !slices.Equal(got, diskFaults) {
		t.Fatalf("disk: %v, %v; want %v", got, err, diskFaults)
	}
	all, err := parseFaults("all")
	if err != nil || hasDiskFault(all) {
		t.Fatalf("all: %v, %v; want no disk fault", all, err)
	}
	both, err := parseFaults("kill,disk,power-loss")
	if err != nil || len(both) != 1+len(diskFaults) || both[0] != faultKill {
		t.Fatalf("kill,disk,power-loss: %v, %v", both, err)
	}
	if _, err := parseFaults("disk-slow"); err == nil {
		t.Fatal("an unknown kind was accepted")
	}
}

// TestScheduleOfDiskFaults: the disk faults' draws are in their ranges,
// the fsync stalls aimed at the leader in about half the draws, the power
// losses of every member in about a quarter, torn in about half.
func TestScheduleOfDiskFaults(t *testing.T) {
	n := map[faultKind]int{}
	stallLeader, allPower, torn := 0, 0, 0
	for seed := range int64(200) {
		for _, f := range schedule(seed, diskFaults, nil, 60*time.Second) {
			n[f.Kind]++
			switch f.Kind {
			case faultFsyncStall:
				if f.Hold < 2*time.Second || f.Hold > 10*time.Second || f.Delay != f.Hold {
					t.Fatalf("fsync-stall held %v with fsyncs delayed %v", f.Hold, f.Delay)
				}
				if f.Member == -1 {
					stallLeader++
				}
			case faultDiskEIO:
				if f.Hold != time.Second {
					t.Fatalf("disk-eio held %v", f.Hold)
				}
			case faultDiskFull:
				if f.Hold < 2*time.Second || f.Hold > 5*time.Second {
					t.Fatalf("disk-full held %v", f.Hold)
				}
			case faultPowerLoss:
				if f.All {
					allPower++
				}
				if f.Torn != 0 {
					torn++
				}
			}
		}
	}
	for _, k := range diskFaults {
		if n[k] < 100 {
			t.Fatalf("200 schedules of 60 s have %d %s faults", n[k], k)
		}
	}
	between := func(what string, got, of int, lo, hi float64) {
		if f := float64(got) / float64(of); f < lo || f > hi {
			t.Errorf("%s in %d of %d draws", what, got, of)
		}
	}
	between("fsync-stall aimed at the leader", stallLeader, n[faultFsyncStall], 0.4, 0.6)
	between("power-loss of every member", allPower, n[faultPowerLoss], 0.15, 0.35)
	between("power-loss keeping a torn prefix", torn, n[faultPowerLoss], 0.4, 0.6)
}
