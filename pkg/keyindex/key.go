package keyindex

import "unsafe"

// A keyIndex is the history of one key: its generations, oldest first. A
// generation runs from the put that created the key (version 1) to the
// tombstone that deleted it; the last generation is the live one and is empty
// when the key does not exist at the latest revision.
//
// A key written once, the common case, is one object of 96 bytes, a size
// class of Go's: the key is held as a string (a header 8 bytes shorter
// than a slice's, its bytes never changed), and a generation keeps the main
// revision of its creation only (the sub-revision is never asked for).
type keyIndex struct {
	key         string
	generations []generation
}

type generation struct {
	ver     int64      // version of the newest revision in revs
	created int64      // the main revision of the put that started the generation
	revs    []Revision // oldest first; in a finished generation the last one is the tombstone
}

func (g *generation) isEmpty() bool { return len(g.revs) == 0 }

// newKeyIndex returns the empty history of key, which it keeps: the caller
// must not change key's bytes after. Its first generation and
// that generation's first revision are allocated with it: most keys have one
// of each, and then their history is one object, read with one cache miss
// where three allocations took three.
func newKeyIndex(key []byte) *keyIndex {
	in := &oneObject{}
	in.gen[0].revs = in.rev[:0]
	in.ki.key, in.ki.generations = asString(key), in.gen[:]
	return &in.ki
}

// oneObject is a key's history with its first generation and revision, as
// newKeyIndex allocates it.
type oneObject struct {
	ki  keyIndex
	gen [1]generation
	rev [1]Revision
}

// put records a change of the key at rev.
func (ki *keyIndex) put(rev Revision) {
	g := &ki.generations[len(ki.generations)-1]
	if g.isEmpty() {
		g.created = rev.Main
	}
	g.revs = append(g.revs, rev)
	g.ver++
}

// tombstone records the deletion of the key at rev and opens a new, empty
// generation. It reports false when the key does not exist.
func (ki *keyIndex) tombstone(rev Revision) bool {
	if ki.generations[len(ki.generations)-1].isEmpty() {
		return false
	}
	ki.put(rev)
	ki.generations = append(ki.generations, generation{})
	return true
}

// liveSince returns the main revision of the key's newest put if the key
// exists at the latest revision, else 0.
func (ki *keyIndex) liveSince() int64 {
	g := &ki.generations[len(ki.generations)-1]
	if g.isEmpty() {
		return 0
	}
	return g.revs[len(g.revs)-1].Main
}

// findGeneration returns the generation that holds the key's state at main
// revision atRev, or nil when the key did not exist then.
func (ki *keyIndex) findGeneration(atRev int64) *generation {
	last := len(ki.generations) - 1
	for i := last; i >= 0; i-- {
		g := &ki.generations[i]
		if g.isEmpty() {
			continue
		}
		if i != last && g.revs[len(g.revs)-1].Main <= atRev {
			return nil // deleted at or before atRev, not re-created since
		}
		if g.revs[0].Main <= atRev {
			return g
		}
	}
	return nil
}

// get returns the revision that holds the key's value at atRev, the revision
// that created that generation, and the key's version there.
func (ki *keyIndex) get(atRev int64) (mod, created Revision, ver int64, ok bool) {
	g := ki.findGeneration(atRev)
	if g == nil {
		return Revision{}, Revision{}, 0, false
	}
	n := newestAtOrBefore(g.revs, atRev)
	if n < 0 {
		return Revision{}, Revision{}, 0, false
	}
	return g.revs[n], Revision{Main: g.created}, g.ver - int64(len(g.revs)-1-n), true
}

// firstChangeAfter returns the key's first put or tombstone after main
// revision atRev (the zero Revision if none).
func (ki *keyIndex) firstChangeAfter(atRev int64) Revision {
	for i := range ki.generations {
		g := &ki.generations[i]
		if n := len(g.revs); n > 0 && g.revs[n-1].Main > atRev {
			return g.revs[newestAtOrBefore(g.revs, atRev)+1]
		}
	}
	return Revision{}
}

// newestAtOrBefore returns the index of the newest revision in revs whose
// main revision is at most atRev, or -1.
func newestAtOrBefore(revs []Revision, atRev int64) int {
	lo, hi := 0, len(revs) // invariant: revs[:lo] <= atRev, revs[hi:] > atRev
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if revs[mid].Main <= atRev {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo - 1
}

// compactionPoint finds, for a compaction at atRev, the first generation that
// survives and the index within it of the newest revision at or before atRev
// (-1 when the generation starts after atRev). Generations whose tombstone is
// before atRev are entirely obsolete.
func (ki *keyIndex) compactionPoint(atRev int64) (genIdx, revIdx int) {
	for genIdx < len(ki.generations)-1 {
		g := ki.generations[genIdx]
		if g.revs[len(g.revs)-1].Main >= atRev {
			break
		}
		genIdx++
	}
	return genIdx, newestAtOrBefore(ki.generations[genIdx].revs, atRev)
}

// kept returns the revision a compaction at atRev retains for this key: the
// newest one at or before atRev, unless it is a tombstone.
func (ki *keyIndex) kept(atRev int64) (Revision, bool) {
	genIdx, revIdx := ki.compactionPoint(atRev)
	if revIdx < 0 {
		return Revision{}, false
	}
	g := ki.generations[genIdx]
	if revIdx == len(g.revs)-1 && genIdx != len(ki.generations)-1 {
		return Revision{}, false // the tombstone ends the generation: nothing to keep
	}
	return g.revs[revIdx], true
}

// compact drops every revision a read at or after atRev can no longer need
// and reports whether the key has no history left.
func (ki *keyIndex) compact(atRev int64) (empty bool) {
	genIdx, revIdx := ki.compactionPoint(atRev)
	g := &ki.generations[genIdx]
	if revIdx > 0 {
		g.revs = append([]Revision(nil), g.revs[revIdx:]...)
	}
	if len(g.revs) == 1 && genIdx != len(ki.generations)-1 {
		genIdx++ // only the tombstone is left: the generation is over
	}
	if genIdx > 0 {
		ki.generations = append([]generation(nil), ki.generations[genIdx:]...)
	}
	return len(ki.generations) == 1 && ki.generations[0].isEmpty()
}

// restore replays one revision read from the backend while rebuilding the
// index. The version and creation revision come from the stored KeyValue,
// since compaction may have removed the revisions before it.
func (ki *keyIndex) restore(rev Revision, tombstone bool, createRev, version int64) {
	g := &ki.generations[len(ki.generations)-1]
	if tombstone {
		if !g.isEmpty() {
			ki.tombstone(rev)
		}
		return
	}
	if g.isEmpty() {
		g.created = createRev
	}
	g.revs = append(g.revs, rev)
	g.ver = version
}

// asString is b as a string that shares its bytes, which must not change.
func asString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// asBytes is s as a slice that shares its bytes, which must not be changed.
func asBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
