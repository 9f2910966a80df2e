package keyindex

import (
	"fmt"
	"maps"
	"math/rand"
	"reflect"
	"testing"
)

// TestCompactInBatchesAsAtOnce builds two indexes with the same random
// history, compacts one at once and the other in small batches with puts
// and deletes of later revisions between the batches (applied to the first
// after its compaction), and compares every key's history, the revisions
// each compaction keeps, and Keep done both ways. Replay a failure with
// -keyindex.seed=N.
func TestCompactInBatchesAsAtOnce(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	for round := range 20 {
		keys := 1 + rng.Intn(500)
		whole, batched := New(), New()
		key := func() []byte { return fmt.Appendf(nil, "k%04d", rng.Intn(keys)) }
		type changed struct {
			key []byte
			del bool
			rev Revision
		}
		apply := func(c changed, to ...*Index) {
			for _, ti := range to {
				if c.del {
					ti.Tombstone(c.key, c.rev)
				} else {
					ti.Put(c.key, c.rev)
				}
			}
		}
		change := func(rev int64) changed { return changed{key(), rng.Intn(3) == 0, Revision{Main: rev}} }
		rev := int64(1)
		for range 5 * keys {
			rev++
			apply(change(rev), whole, batched)
		}
		prev := 1 + rng.Int63n(rev/2)
		whole.Compact(prev)
		batched.Compact(prev)
		atRev := prev + rng.Int63n(rev-prev+1)

		wantVisible, wantRetained := whole.Keep(prev, atRev)
		visible, retained := map[Revision]struct{}{}, 0
		limit := 1 + rng.Intn(20)
		for from := []byte{}; from != nil; {
			var n int
			n, from = batched.KeepBatch(prev, atRev, from, limit, visible)
			retained += n
		}
		if retained != wantRetained || !maps.Equal(visible, wantVisible) {
			t.Fatalf("seed %d round %d: Keep in batches of %d: %d retained, %d visible; at once %d, %d",
				seed, round, limit, retained, len(visible), wantRetained, len(wantVisible))
		}

		wantKept := whole.Compact(atRev)
		kept := map[Revision]struct{}{}
		var later []changed
		for from := []byte{}; from != nil; {
			from = batched.CompactBatch(atRev, from, limit, kept)
			rev++
			c := change(rev)
			apply(c, batched)
			later = append(later, c)
		}
		if !maps.Equal(kept, wantKept) {
			t.Fatalf("seed %d round %d: compaction in batches of %d keeps %d revisions, at once %d", seed, round, limit, len(kept), len(wantKept))
		}
		// The same later changes, in the same order, to the other index.
		for _, c := range later {
			apply(c, whole)
		}
		if whole.Len() != batched.Len() {
			t.Fatalf("seed %d round %d: %d keys compacted at once, %d in batches", seed, round, whole.Len(), batched.Len())
		}
		whole.tree.Ascend(func(it indexItem) bool {
			got, ok := batched.tree.Get(it)
			if !ok || !reflect.DeepEqual(got.ki, it.ki) || got.liveSince != it.liveSince {
				t.Fatalf("seed %d round %d: key %q compacted in batches %+v, at once %+v", seed, round, it.ki.key, got.ki, it.ki)
			}
			return true
		})
	}
}
