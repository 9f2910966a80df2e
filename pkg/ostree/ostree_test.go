package ostree

import (
	"flag"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var seed = flag.Uint64("seed", 0, "seed of TestAgainstASortedSlice (0: from the clock)")

// item is a key with a weight of 0 or 1; items are ordered by key alone.
type item struct{ key, w int }

func lessItem(a, b item) bool { return a.key < b.key }
func weightOf(a item) int     { return a.w }

// seeded is the seed of the test (-seed, or the clock's), logged with the
// command that replays it, and a generator drawing from it.
func seeded(t *testing.T) (uint64, *rand.Rand) {
	t.Helper()
	s := *seed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (go test ./pkg/ostree -run '^%s$' -seed %d)", s, t.Name(), s)
	return s, rand.New(rand.NewPCG(s, s))
}

// TestAgainstASortedSlice applies random inserts, replacements and
// deletions to a tree and to a sorted slice, and after each step compares
// every answer of the tree with the slice's and checks the tree's
// invariants. The key space is small against the steps, so that nodes
// split, merge and borrow all the time; -seed replays a run.
func TestAgainstASortedSlice(t *testing.T) {
	s, rng := seeded(t)
	for round := range 4 {
		keys := []int{100, 1000, 5000, 20000}[round]
		exercise(t, s, rng, New(lessItem, weightOf), nil, keys, 30000)
	}
}

// exercise applies steps random inserts, replacements and deletions of
// keys below keys to tr and to model, the sorted slice tr holds, comparing
// their answers after each step and checking tr's invariants.
func exercise(t *testing.T, s uint64, rng *rand.Rand, tr *Tree[item], model []item, keys, steps int) {
	t.Helper()
	find := func(k int) (int, bool) {
		return slices.BinarySearchFunc(model, k, func(it item, k int) int { return it.key - k })
	}
	for step := range steps {
		k := rng.IntN(keys)
		x := item{k, rng.IntN(2)}
		i, found := find(k)
		// Deletions are as likely as inserts once the tree is half full.
		if rng.IntN(2) == 0 && len(model) > keys/2 {
			got, ok := tr.Delete(x)
			if ok != found || found && got != model[i] {
				t.Fatalf("seed %d step %d: Delete(%d) = %v, %v; want %v", s, step, k, got, ok, found)
			}
			if found {
				model = slices.Delete(model, i, i+1)
			}
		} else {
			old, replaced := tr.ReplaceOrInsert(x)
			if replaced != found || found && old != model[i] {
				t.Fatalf("seed %d step %d: ReplaceOrInsert(%v) = %v, %v", s, step, x, old, replaced)
			}
			if found {
				model[i] = x
			} else {
				model = slices.Insert(model, i, x)
			}
		}
		if step%97 == 0 || step < 200 {
			check(t, s, tr, model)
		}
		// One random query every step.
		q := rng.IntN(keys + 2)
		j, _ := find(q)
		wantW := 0
		for _, it := range model[:j] {
			wantW += it.w
		}
		if c, w := tr.Before(item{key: q}); c != j || w != wantW {
			t.Fatalf("seed %d step %d: Before(%d) = %d, %d; want %d, %d", s, step, q, c, w, j, wantW)
		}
		if got, ok := tr.Get(item{key: q}); ok != (j < len(model) && model[j].key == q) || ok && got != model[j] {
			t.Fatalf("seed %d step %d: Get(%d) = %v, %v", s, step, q, got, ok)
		}
	}
	check(t, s, tr, model)
}

// check compares the whole tree with the model, through each way of
// walking it, and checks its invariants.
func check(t *testing.T, s uint64, tr *Tree[item], model []item) {
	t.Helper()
	var all []item
	tr.Ascend(func(it item) bool { all = append(all, it); return true })
	if !slices.Equal(all, model) {
		t.Fatalf("seed %d: Ascend gives %d items, the model %d (or they differ)", s, len(all), len(model))
	}
	w := 0
	for _, it := range model {
		w += it.w
	}
	if tr.Len() != len(model) || tr.Weight() != w {
		t.Fatalf("seed %d: Len %d Weight %d, want %d %d", s, tr.Len(), tr.Weight(), len(model), w)
	}
	if mn, ok := tr.Min(); ok != (len(model) > 0) || ok && mn != model[0] {
		t.Fatalf("seed %d: Min %v %v", s, mn, ok)
	}
	if mx, ok := tr.Max(); ok != (len(model) > 0) || ok && mx != model[len(model)-1] {
		t.Fatalf("seed %d: Max %v %v", s, mx, ok)
	}
	if len(model) > 2 {
		from, to := model[len(model)/3].key, model[2*len(model)/3].key
		var got []item
		tr.AscendRange(item{key: from}, item{key: to}, func(it item) bool { got = append(got, it); return true })
		if !slices.Equal(got, model[len(model)/3:2*len(model)/3]) {
			t.Fatalf("seed %d: AscendRange(%d, %d) differs", s, from, to)
		}
		got = got[:0]
		tr.AscendGreaterOrEqual(item{key: from}, func(it item) bool { got = append(got, it); return len(got) < 5 })
		if !slices.Equal(got, model[len(model)/3:min(len(model), len(model)/3+5)]) {
			t.Fatalf("seed %d: AscendGreaterOrEqual(%d) stopping after 5 differs", s, from)
		}
		got = got[:0]
		tr.AscendLessThan(item{key: to}, func(it item) bool { got = append(got, it); return true })
		if !slices.Equal(got, model[:2*len(model)/3]) {
			t.Fatalf("seed %d: AscendLessThan(%d) differs", s, to)
		}
	}
	if tr.root.children != nil && len(tr.root.children) < 2 {
		t.Fatalf("seed %d: a root with one child", s)
	}
	checkNode(t, s, tr, tr.root, nil, nil, true)
}

// checkNode checks that the subtree of n holds items in [lo, hi), that its
// nodes are neither too full nor (but the root) too short, and that the
// counts and weights of inner nodes are those of their children.
func checkNode(t *testing.T, s uint64, tr *Tree[item], n *node[item], lo, hi *item, root bool) (count, weight int) {
	t.Helper()
	if n.size() > maxItems || !root && n.size() < minItems {
		t.Fatalf("seed %d: a node of %d (leaf %v)", s, n.size(), n.children == nil)
	}
	for _, it := range n.items {
		if lo != nil && lessItem(it, *lo) || hi != nil && !lessItem(it, *hi) {
			t.Fatalf("seed %d: item %v out of [%v, %v)", s, it, lo, hi)
		}
	}
	if n.children == nil {
		return len(n.items), tr.weigh(n)
	}
	if len(n.items) != len(n.children)-1 || len(n.counts) != len(n.children) || len(n.weights) != len(n.children) {
		t.Fatalf("seed %d: inner node of %d items, %d children", s, len(n.items), len(n.children))
	}
	for i, c := range n.children {
		clo, chi := lo, hi
		if i > 0 {
			clo = &n.items[i-1]
		}
		if i < len(n.items) {
			chi = &n.items[i]
		}
		cc, cw := checkNode(t, s, tr, c, clo, chi, false)
		if cc != n.counts[i] || cw != n.weights[i] {
			t.Fatalf("seed %d: child %d holds %d weighing %d, its parent says %d, %d", s, i, cc, cw, n.counts[i], n.weights[i])
		}
		count, weight = count+cc, weight+cw
	}
	return count, weight
}

// TestDeletedItemsAreNotKept checks that no separator keeps an item once
// it is deleted: the store's items point at keys' histories, which a
// compaction frees.
func TestDeletedItemsAreNotKept(t *testing.T) {
	tr := New(lessItem, weightOf)
	for k := range 10000 {
		tr.ReplaceOrInsert(item{k, 1})
	}
	for k := 0; k < 10000; k += 2 {
		tr.Delete(item{k, 1})
	}
	var walk func(n *node[item])
	walk = func(n *node[item]) {
		if n.children == nil {
			return
		}
		for _, sep := range n.items {
			if sep.key%2 == 0 {
				t.Fatalf("separator %v is a deleted item", sep)
			}
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(tr.root)
}

// TestBeforeAllocatesNothing pins that counting a range allocates nothing.
func TestBeforeAllocatesNothing(t *testing.T) {
	tr := New(lessItem, weightOf)
	for k := range 100000 {
		tr.ReplaceOrInsert(item{k, k % 2})
	}
	if a := testing.AllocsPerRun(100, func() { tr.Before(item{key: 54321}) }); a != 0 {
		t.Errorf("Before allocates %.0f times", a)
	}
}

func BenchmarkReplaceOrInsert(b *testing.B) {
	tr := New(lessItem, weightOf)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; b.Loop(); i++ {
		tr.ReplaceOrInsert(item{rng.IntN(1 << 20), 1})
	}
}

func BenchmarkBefore(b *testing.B) {
	tr := New(lessItem, weightOf)
	for k := range 1 << 20 {
		tr.ReplaceOrInsert(item{k, 1})
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for b.Loop() {
		tr.Before(item{key: rng.IntN(1 << 20)})
	}
}

// TestBuildAgainstASortedSlice builds trees of sizes around the node
// fills (and random ones) from sorted items, checks them against their
// items, then exercises each with random changes, so that a node Build
// made too short or too full, or a wrong count, shows.
func TestBuildAgainstASortedSlice(t *testing.T) {
	s, rng := seeded(t)
	sizes := []int{0, 1, minItems - 1, minItems, buildFill - 1, buildFill, buildFill + 1, 2*buildFill + 1,
		buildFill * buildFill, buildFill*buildFill + 1}
	for range 5 {
		sizes = append(sizes, rng.IntN(20000))
	}
	for _, n := range sizes {
		keys := 2*n + 10
		model := make([]item, 0, n)
		for _, k := range rng.Perm(keys)[:n] {
			model = append(model, item{k, rng.IntN(2)})
		}
		slices.SortFunc(model, func(a, b item) int { return a.key - b.key })
		tr := Build(lessItem, weightOf, len(model), fillFrom(model))
		check(t, s, tr, model)
		exercise(t, s, rng, tr, slices.Clone(model), keys, 3000)
	}
}

// BenchmarkBuild builds a tree of 1M items, as a restart builds the index.
func BenchmarkBuild(b *testing.B) {
	items := make([]item, 1<<20)
	for k := range items {
		items[k] = item{k, 1}
	}
	for b.Loop() {
		Build(lessItem, weightOf, len(items), fillFrom(items))
	}
}

// fillFrom hands the items over to Build in order.
func fillFrom(items []item) func(dst []item) {
	return func(dst []item) {
		items = items[copy(dst, items):]
	}
}
