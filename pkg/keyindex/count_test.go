package keyindex

import (
	"flag"
	"fmt"
	"math/rand"
	"testing"
	"time"
)

var seedFlag = flag.Int64("keyindex.seed", 0, "seed of the randomized tests (0: time-based)")

// testSeed is the seed of a randomized test: -keyindex.seed, or the
// clock's; it is logged with how to replay it.
func testSeed(t *testing.T) int64 {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with go test ./pkg/keyindex -run '^%s$' -keyindex.seed=%d)", seed, t.Name(), seed)
	return seed
}

// TestCountAgainstAWalk changes random keys of an index (puts, deletes,
// several changes a revision, compactions) with a change log far shorter
// than the run, and after each revision compares the count of a random
// range at a random revision, and the total a limited read returns, with a
// walk of the range. Replay a failure with -keyindex.seed=N.
func TestCountAgainstAWalk(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	ti := New()
	ti.changes.limit = 64
	key := func() []byte { return fmt.Appendf(nil, "k%03d", rng.Intn(300)) }
	rev, compacted := int64(1), int64(0)
	for step := range 20000 {
		rev++
		for sub := range int64(1 + rng.Intn(3)) {
			if k := key(); rng.Intn(3) == 0 {
				ti.Tombstone(k, Revision{rev, sub})
			} else {
				ti.Put(k, Revision{rev, sub})
			}
		}
		if rng.Intn(500) == 0 {
			compacted = compacted + 1 + rng.Int63n(rev-compacted)
			ti.Compact(compacted)
		}
		from, end := key(), key()
		switch rng.Intn(4) {
		case 0:
			end = []byte{0}
		case 1:
			end = nil
		}
		// Mostly recent revisions, whose changes the log holds.
		at := rev - rng.Int63n(min(rev-compacted, 100)+1)
		if rng.Intn(10) == 0 {
			at = compacted + rng.Int63n(rev-compacted+1)
		}
		want := ti.countWalk(from, end, at, 0)
		if got := ti.CountAt(from, end, at); got != want {
			t.Fatalf("seed %d step %d: count of [%s, %q) at %d (current %d, compacted %d) = %d, a walk %d",
				seed, step, from, end, at, rev, compacted, got, want)
		}
		limit := 1 + rng.Intn(5)
		if kas, total := ti.RangeAt(from, end, at, limit); total != want || len(kas) != min(want, limit) {
			t.Fatalf("seed %d step %d: range of [%s, %q) at %d limit %d: %d keys of %d, a walk %d",
				seed, step, from, end, at, limit, len(kas), total, want)
		}
	}
}
