package keyindex

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
)

// TestCompactInBatchesAsAtOnce builds two indexes with the same random
// history, compacts one at once and the other in small batches with puts
// and deletes of later revisions between the batches (applied to the first
// after its compaction), and compares every key's history; it checks that a
// compacted key keeps, of its revisions at or before the compaction, only
// the one live there, and RetainsAny against a walk of every key. Replay a
// failure with -keyindex.seed=N.
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

		// A compaction at prev retains a revision of some key iff some key
		// is live there.
		live := false
		whole.tree.Ascend(func(it indexItem) bool {
			_, live = it.ki.at(prev)
			return !live
		})
		limit := 1 + rng.Intn(20)
		if got := batched.RetainsAny(prev, limit); got != live {
			t.Fatalf("seed %d round %d: RetainsAny(%d) in batches of %d = %v, want %v", seed, round, prev, limit, got, live)
		}

		// What a key is at atRev, before the compaction there.
		before := map[string]KeyAt{}
		whole.tree.Ascend(func(it indexItem) bool {
			if ka, ok := it.ki.at(atRev); ok {
				before[string(it.ki.key)] = ka
			}
			return true
		})
		whole.Compact(atRev)
		var later []changed
		for from := []byte{}; from != nil; {
			from = batched.CompactBatch(atRev, from, limit)
			rev++
			c := change(rev)
			apply(c, batched)
			later = append(later, c)
		}
		// Of its revisions at or before atRev, a key keeps the one live at
		// atRev, and only that one (the backend's compaction keeps the same).
		whole.tree.Ascend(func(it indexItem) bool {
			var held []Revision
			for _, g := range it.ki.generations {
				for _, r := range g.revs {
					if r.Main <= atRev {
						held = append(held, r)
					}
				}
			}
			ka, wasLive := before[string(it.ki.key)]
			now, isLive := it.ki.at(atRev)
			switch {
			case isLive != wasLive || isLive && now.Mod != ka.Mod:
				t.Fatalf("seed %d round %d: key %q at %d: %+v (%v) after the compaction, %+v (%v) before", seed, round, it.ki.key, atRev, now, isLive, ka, wasLive)
			case wasLive && !reflect.DeepEqual(held, []Revision{ka.Mod}), !wasLive && len(held) > 0:
				t.Fatalf("seed %d round %d: key %q holds %v at or before %d; live there: %v %v", seed, round, it.ki.key, held, atRev, wasLive, ka.Mod)
			}
			return true
		})
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
