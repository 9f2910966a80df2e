package keyindex

// keyTable finds a load shard's keys by their hash while the loader
// gathers them. It is an open-addressed table of slots; a slot holds the
// upper half of a key's hash (its tag) and the key's place in the shard's
// keys plus one, 0 being an empty slot. The tag picks the slot a probe
// starts at, so that the table grows from its slots alone, and tells most
// keys apart without reading them: a key is compared only where its tag
// matches, so keys whose hashes collide are found like any other.
//
// It took the place of Go maps (of hash to place, and of key to place for
// the keys whose hash another key had): at 10M keys their lookups,
// inserts and growth were a third of a restart's time. A slot is 8 bytes,
// a probe mostly one cache line, and a new key costs one lookup.
type keyTable struct {
	slots []uint64
	used  int
}

// minTableSlots is a new table's size: 512 KB, a few growths short of a
// large keyspace's.
const minTableSlots = 1 << 16

// find returns the place in keys of the key with the given tag and bytes.
func (t *keyTable) find(tag uint32, key []byte, keys []*keyIndex) (int, bool) {
	if t.slots == nil {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	// Triangular steps (1, 2, 3, ...) visit every slot of a table whose
	// size is a power of two; the table is never full.
	for p, step := uint64(tag)&mask, uint64(1); ; p, step = (p+step)&mask, step+1 {
		s := t.slots[p]
		if s == 0 {
			return 0, false
		}
		if uint32(s>>32) == tag {
			if i := int(uint32(s)) - 1; keys[i].key == string(key) {
				return i, true
			}
		}
	}
}

// add records that the key with the given tag is at place i of keys. The
// key must not be in the table yet.
func (t *keyTable) add(tag uint32, i int) {
	if (t.used+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	t.place(uint64(tag)<<32 | uint64(i+1))
	t.used++
}

func (t *keyTable) place(slot uint64) {
	mask := uint64(len(t.slots) - 1)
	for p, step := (slot>>32)&mask, uint64(1); ; p, step = (p+step)&mask, step+1 {
		if t.slots[p] == 0 {
			t.slots[p] = slot
			return
		}
	}
}

// grow doubles the table, placing every slot again.
func (t *keyTable) grow() {
	old := t.slots
	t.slots = make([]uint64, max(minTableSlots, 2*len(old)))
	for _, s := range old {
		if s != 0 {
			t.place(s)
		}
	}
}
