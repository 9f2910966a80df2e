package lease

import (
	"slices"
	"testing"
	"time"
)

func TestCheckpointsDue(t *testing.T) {
	e := newEnv(t, Config{CheckpointInterval: 10 * time.Second})
	e.grant(1, 60)
	e.grant(2, 5) // shorter than the interval: never checkpointed
	if cps := e.l.CheckpointsDue(); cps != nil {
		t.Fatalf("a lessor that is not primary proposed %v", cps)
	}
	e.l.Promote(0)
	e.clock.Advance(10*time.Second - time.Nanosecond)
	if cps := e.l.CheckpointsDue(); len(cps) != 0 {
		t.Fatalf("checkpoints %v before the interval", cps)
	}
	e.clock.Advance(time.Nanosecond)
	if cps := e.l.CheckpointsDue(); !slices.Equal(cps, []Checkpoint{{1, 50}}) {
		t.Fatalf("checkpoints %v, want [{1 50}]", cps)
	}
	if cps := e.l.CheckpointsDue(); len(cps) != 0 {
		t.Fatalf("checkpoints %v again at once", cps)
	}
	e.clock.Advance(10*time.Second + 500*time.Millisecond)
	if cps := e.l.CheckpointsDue(); !slices.Equal(cps, []Checkpoint{{1, 40}}) {
		t.Fatalf("checkpoints %v, want [{1 40}] (39.5s rounded up)", cps)
	}

	// Renewed: the next checkpoint is an interval after the renew.
	if _, err := e.renew(1); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(9 * time.Second)
	if cps := e.l.CheckpointsDue(); len(cps) != 0 {
		t.Fatalf("checkpoints %v within an interval of the renew", cps)
	}
	e.clock.Advance(time.Second)
	if cps := e.l.CheckpointsDue(); !slices.Equal(cps, []Checkpoint{{1, 50}}) {
		t.Fatalf("checkpoints %v, want [{1 50}]", cps)
	}

	// With no more than an interval left, no further checkpoint is scheduled.
	e.clock.Advance(40 * time.Second) // 10 s left
	if cps := e.l.CheckpointsDue(); !slices.Equal(cps, []Checkpoint{{1, 10}}) {
		t.Fatalf("checkpoints %v, want [{1 10}]", cps)
	}
	e.clock.Advance(time.Hour)
	if cps := e.l.CheckpointsDue(); len(cps) != 0 {
		t.Fatalf("checkpoints %v of an expired lease", cps)
	}
}

// A checkpoint keeps a new leader from restarting a lease's full TTL.
func TestCheckpointSurvivesLeaderChange(t *testing.T) {
	e := newEnv(t, Config{CheckpointInterval: 10 * time.Second})
	e.grant(1, 60)
	e.l.Promote(0)
	e.clock.Advance(30 * time.Second)
	cps := e.l.CheckpointsDue()
	if !slices.Equal(cps, []Checkpoint{{1, 30}}) {
		t.Fatalf("checkpoints %v, want [{1 30}]", cps)
	}
	e.checkpoint(cps[0].ID, cps[0].RemainingTTL) // proposed and applied
	e.l.Demote()

	// Another member, recovering from the same store, becomes leader.
	other, err := New(e.s, Config{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	other.Promote(2 * time.Second)
	ls, _ := other.Lookup(1)
	if got := ls.Expiry.Sub(e.clock.Now()); got != 32*time.Second {
		t.Errorf("new leader's expiry in %v, want 32s (30s checkpointed + 2s)", got)
	}
}

func TestCheckpointsSkipExtendedLeases(t *testing.T) {
	e := newEnv(t, Config{CheckpointInterval: 10 * time.Second})
	e.grant(1, 60)
	e.l.Promote(20 * time.Second) // expires in 80 s
	e.clock.Advance(10 * time.Second)
	if cps := e.l.CheckpointsDue(); len(cps) != 0 {
		t.Fatalf("checkpoints %v with 70s of a 60s TTL left", cps)
	}
	e.clock.Advance(20 * time.Second)
	if cps := e.l.CheckpointsDue(); !slices.Equal(cps, []Checkpoint{{1, 50}}) {
		t.Fatalf("checkpoints %v, want [{1 50}]", cps)
	}
}

func TestCheckpointBatch(t *testing.T) {
	e := newEnv(t, Config{CheckpointInterval: time.Second, CheckpointBatch: 3})
	for i := int64(1); i <= 5; i++ {
		e.grant(i, 100)
	}
	e.l.Promote(0)
	e.clock.Advance(time.Second)
	a, b, c := e.l.CheckpointsDue(), e.l.CheckpointsDue(), e.l.CheckpointsDue()
	if len(a) != 3 || len(b) != 2 || len(c) != 0 {
		t.Fatalf("batches of %d, %d, %d; want 3, 2, 0", len(a), len(b), len(c))
	}
	var ids []int64
	for _, cp := range append(a, b...) {
		ids = append(ids, cp.ID)
		if cp.RemainingTTL != 99 {
			t.Errorf("checkpoint %+v, want remaining 99", cp)
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []int64{1, 2, 3, 4, 5}) {
		t.Errorf("checkpointed %v", ids)
	}
}

func TestCheckpointsDisabled(t *testing.T) {
	e := newEnv(t, Config{CheckpointInterval: -1})
	e.grant(1, 600)
	e.l.Promote(0)
	for range 10 {
		e.clock.Advance(DefaultCheckpointInterval)
		if cps := e.l.CheckpointsDue(); len(cps) != 0 {
			t.Fatalf("checkpoints %v with checkpointing off", cps)
		}
	}
}

func TestDemoteDropsCheckpoints(t *testing.T) {
	e := newEnv(t, Config{CheckpointInterval: time.Second})
	e.grant(1, 100)
	e.checkpoint(1, 50)
	e.l.Promote(0)
	if _, err := e.renew(1); err != nil { // queues a clear
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	e.l.Demote()
	if cps := e.l.CheckpointsDue(); cps != nil {
		t.Fatalf("checkpoints %v after Demote", cps)
	}
	e.l.Promote(0)
	if cps := e.l.CheckpointsDue(); len(cps) != 0 {
		t.Fatalf("checkpoints %v queued before Demote came back", cps)
	}
}
