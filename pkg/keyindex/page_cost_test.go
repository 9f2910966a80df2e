package keyindex

import (
	"fmt"
	"testing"

	"github.com/cairnkv/cairn/pkg/ostree"
)

// pagedIndex is an index of n keys under /registry/pods/ and one after
// them, at revision 1+n; then 200 changes in the range (updates, deletes
// and creates) after it. Its compares counts the index's key comparisons.
type pagedIndex struct {
	ti       *Index
	compares int
	listRev  int64
}

func newPagedIndex(n int) *pagedIndex {
	p := &pagedIndex{}
	p.ti = &Index{changes: changeLog{limit: maxChanges}}
	p.ti.tree = ostree.New(func(a, b indexItem) bool { p.compares++; return lessItem(a, b) }, liveWeight)
	rev := int64(1)
	for i := range n {
		rev++
		p.ti.Put(fmt.Appendf(nil, "/registry/pods/%09d", i*2), Revision{Main: rev})
	}
	rev++
	p.ti.Put([]byte("/registry/zzz"), Revision{Main: rev}) // keeps the range's end a bound of the walk
	p.listRev = rev
	for i := range 200 {
		rev++
		k := fmt.Appendf(nil, "/registry/pods/%09d", (i*7919%n)*2+i%3/2) // odd: created
		if i%3 == 0 {
			p.ti.Tombstone(k, Revision{Main: rev})
		} else {
			p.ti.Put(k, Revision{Main: rev})
		}
	}
	return p
}

// page reads the page of limit keys from the middle of the range at the
// list's revision, and returns its keys, the count, and the compares it
// took.
func (p *pagedIndex) page(n, limit int) (int, int, int) {
	from := fmt.Appendf(nil, "/registry/pods/%09d", n)
	p.compares = 0
	kas, total := p.ti.RangeAt(from, []byte("/registry/pods0"), p.listRev, limit)
	return len(kas), total, p.compares
}

// TestPageCostIsFlat pins that a page of a list costs the same whatever
// the size of the range: a page of 500 in a range of 1,000,000 keys takes
// about as many key comparisons (descents of the tree, and one for each key
// a walk passes) as in a range of 10,000, and its count allocates nothing
// per key. A read at a revision the change log no longer reaches walks
// the rest of the range: the measure sees that.
func TestPageCostIsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an index of 1,000,000 keys")
	}
	small, large := newPagedIndex(10000), newPagedIndex(1000000)
	kSmall, nSmall, cSmall := small.page(10000, 500)
	kLarge, nLarge, cLarge := large.page(1000000, 500)
	t.Logf("a page of 500: %d compares in a range of 10,000 keys, %d in one of 1,000,000", cSmall, cLarge)
	if kSmall != 500 || kLarge != 500 || nSmall != small.ti.countWalk([]byte("/registry/pods/000010000"), []byte("/registry/pods0"), small.listRev, 0) ||
		nLarge != large.ti.countWalk([]byte("/registry/pods/001000000"), []byte("/registry/pods0"), large.listRev, 0) {
		t.Fatalf("pages of %d and %d keys counting %d and %d", kSmall, kLarge, nSmall, nLarge)
	}
	if float64(cLarge) > 1.25*float64(cSmall) {
		t.Errorf("a page costs %d compares in a range of 1,000,000 keys, %d in one of 10,000", cLarge, cSmall)
	}
	for _, p := range []*pagedIndex{small, large} {
		from, end := []byte("/registry/pods/000001000"), []byte("/registry/pods0")
		if a := testing.AllocsPerRun(20, func() { p.ti.CountAt(from, end, p.listRev) }); a > 4 {
			t.Errorf("a count allocates %.0f times in a range of %d keys", a, p.ti.Len())
		}
	}
	// Past the change log: the walk of the rest shows in the compares.
	large.ti.changes.skip(large.listRev + 200)
	_, _, cWalk := large.page(1000000, 500)
	if cWalk < 500000 {
		t.Errorf("a page read past the change log took %d compares: the measure does not see a walk", cWalk)
	}
}
