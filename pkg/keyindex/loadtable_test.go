package keyindex

import (
	"fmt"
	"hash/maphash"
	"testing"
)

// TestKeyTable adds keys past several growths, with real tags and with
// tags that only a few values share, and finds each at its place; keys
// never added are not found.
func TestKeyTable(t *testing.T) {
	seed := maphash.MakeSeed()
	for _, tc := range []struct {
		name string
		tag  func(key []byte) uint32
	}{
		{"hashed", func(key []byte) uint32 { return uint32(maphash.Bytes(seed, key) >> 32) }},
		{"colliding", func(key []byte) uint32 { return uint32(len(key) % 3) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 4 * minTableSlots
			if tc.name == "colliding" {
				n = 2000 // every probe walks a third of the keys
			}
			var table keyTable
			var keys []*keyIndex
			for i := range n {
				key := fmt.Appendf(nil, "key-%d", i)
				if _, ok := table.find(tc.tag(key), key, keys); ok {
					t.Fatalf("%s found before it was added", key)
				}
				table.add(tc.tag(key), len(keys))
				keys = append(keys, newKeyIndex(key))
			}
			if table.used != n || table.used*4 > len(table.slots)*3 {
				t.Fatalf("%d keys in %d slots, %d used", n, len(table.slots), table.used)
			}
			for i := range n {
				key := fmt.Appendf(nil, "key-%d", i)
				if got, ok := table.find(tc.tag(key), key, keys); !ok || got != i {
					t.Fatalf("%s found at %d (%v), want %d", key, got, ok, i)
				}
				other := fmt.Appendf(nil, "other-%d", i)
				if got, ok := table.find(tc.tag(other), other, keys); ok {
					t.Fatalf("%s, never added, found at %d", other, got)
				}
			}
		})
	}
}
