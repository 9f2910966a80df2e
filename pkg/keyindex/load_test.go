package keyindex

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"unsafe"
)

// TestIndexLoaderAgainstTheLiveIndex replays random histories of puts and
// deletions, as the backend holds them, into an Loader, and compares
// the index it builds with the one the same history made live: every
// key's history, and every count. The loader's hash is the real one, then
// one of four values, so that most keys share their hash with another.
// Replay a failure with -keyindex.seed=N.
func TestIndexLoaderAgainstTheLiveIndex(t *testing.T) {
	seed := uint64(testSeed(t))
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, collide := range []bool{false, true} {
		for _, keys := range []int{1, 50, 3000} {
			live := New()
			loader := NewLoader()
			if collide {
				loader.hash = func(key []byte) uint64 { return uint64(len(key) % 4) }
			}
			for main := int64(2); main < int64(10*keys); main++ {
				key := fmt.Appendf(nil, "k%d", rng.IntN(keys))
				rev := Revision{Main: main}
				if rng.IntN(3) == 0 {
					// A deletion of a key that does not exist is not in the
					// backend; one that does is a tombstone.
					if live.Tombstone(key, rev) {
						loader.Add(key, rev, true, 0, 0)
					}
					continue
				}
				live.Put(key, rev)
				ka, _ := live.Get(key, main)
				loader.Add(key, rev, false, ka.Created.Main, ka.Version)
			}
			built := loader.Index()
			if built.Len() != live.Len() {
				t.Fatalf("seed %d collide %v keys %d: %d keys built, %d live", seed, collide, keys, built.Len(), live.Len())
			}
			live.visit(nil, []byte{0xff}, func(it indexItem) bool {
				got, ok := built.tree.Get(it)
				if !ok || !reflect.DeepEqual(got.ki, it.ki) || got.liveSince != it.liveSince {
					t.Fatalf("seed %d collide %v keys %d: key %q built as %+v, live %+v", seed, collide, keys, it.ki.key, got.ki, it.ki)
				}
				return true
			})
			for range 20 {
				at := rng.Int64N(int64(10 * keys))
				if b, l := built.CountAt(nil, []byte{0xff}, at), live.CountAt(nil, []byte{0xff}, at); b != l {
					t.Fatalf("seed %d collide %v keys %d: %d keys at %d built, %d live", seed, collide, keys, b, at, l)
				}
			}
		}
	}
}

// TestKeyHistoryIsNinetySixBytes: a key written once costs one object of
// Go's 96-byte size class; 8 bytes more would take the 112-byte class, 160
// MB more at 10M keys.
func TestKeyHistoryIsNinetySixBytes(t *testing.T) {
	if size := unsafe.Sizeof(oneObject{}); size != 96 {
		t.Errorf("a key's history with one generation and one revision is %d bytes, want 96", size)
	}
}
