// Package ostree is an ordered set kept in a B+ tree whose inner nodes
// know, for each child, how many items it holds and the sum of their
// weights: how many items of any range there are, and their weight, is a
// descent of the tree (O(log n)), where an ordinary B-tree walks the range.
// The store's index weighs a key 1 while it exists, so that counting the
// keys of a range costs the same for a thousand keys as for ten million.
//
// It is not safe for concurrent use.
package ostree

// Sizes of the nodes: a leaf or an inner node holds at most maxItems items
// or children, and a node that falls below minItems is merged with or
// filled from a sibling.
const (
	maxItems = 64
	minItems = maxItems / 4
)

// leafRoom is the room a leaf's items get at first, in items: a leaf that
// fills it grows once, to maxItems, and splits into two of leafRoom. The
// leaves hold the items, a quarter of the store's index at 10M keys, and
// with room for maxItems+1 in every leaf a random load left 40% of it
// empty. 48 and 64 items of the index's 24 bytes fill Go's size classes.
const leafRoom = maxItems * 3 / 4

// withRoom returns items with room for k more (k <= maxItems-len(items)),
// grown to leafRoom or maxItems, not doubled as append would.
func withRoom[T any](items []T, k int) []T {
	if len(items)+k <= cap(items) {
		return items
	}
	c := leafRoom
	if len(items)+k > c {
		c = maxItems
	}
	grown := make([]T, len(items), c)
	copy(grown, items)
	return grown
}

// Tree is an ordered set of items, ordered by less, each weighing weight.
type Tree[T any] struct {
	less   func(a, b T) bool
	weight func(T) int
	root   *node[T]
	length int
	total  int // the weight of every item
}

// node is a leaf (children nil: items are the items) or an inner node
// (items[i] separates children[i] and children[i+1]: every item of
// children[i] is less than it, and none of children[i+1] is).
type node[T any] struct {
	items    []T
	children []*node[T]
	counts   []int // per child: its items
	weights  []int // per child: their weight
}

// New is an empty tree.
func New[T any](less func(a, b T) bool, weight func(T) int) *Tree[T] {
	return &Tree[T]{less: less, weight: weight, root: &node[T]{}}
}

// Build is the tree of n items, built bottom-up in O(n): the store's
// index at a restart, where inserting millions of keys one by one in the
// order they were written descends the tree once per key, each descent a
// few cache misses. fill hands the items over in order, sorted by less and
// distinct, a node's worth at a time: it writes the next len(dst) items
// into dst, so that items merged from several sorted runs go straight into
// the nodes. Nodes are filled to buildFill items or children, so that the
// inserts that follow split few.
func Build[T any](less func(a, b T) bool, weight func(T) int, n int, fill func(dst []T)) *Tree[T] {
	t := New(less, weight)
	if n == 0 {
		return t
	}
	level := make([]*node[T], 0, (n+buildFill-1)/buildFill)
	for _, part := range evenParts(n) {
		nd := &node[T]{items: make([]T, part.end-part.start)}
		fill(nd.items)
		level = append(level, nd)
		t.total += t.weigh(nd)
	}
	for len(level) > 1 {
		parts := evenParts(len(level))
		up := make([]*node[T], 0, len(parts))
		for _, part := range parts {
			children := level[part.start:part.end]
			n := &node[T]{
				items:    make([]T, 0, len(children)-1),
				children: append([]*node[T](nil), children...),
				counts:   make([]int, len(children)),
				weights:  make([]int, len(children)),
			}
			for i, c := range children {
				if i > 0 {
					n.items = append(n.items, c.least())
				}
				n.counts[i], n.weights[i] = c.count(), t.weigh(c)
			}
			up = append(up, n)
		}
		level = up
	}
	t.root = level[0]
	t.length = n
	return t
}

// buildFill is how many items or children Build puts in a node: three
// quarters full, about as full as random inserts leave a node.
const buildFill = maxItems * 3 / 4

// part is the run [start, end) of a level's items or nodes that Build
// puts under one node.
type part struct{ start, end int }

// evenParts cuts n into as few parts of at most buildFill as it can, of
// sizes that differ by at most one: each part but a lone one holds more
// than buildFill/2 >= minItems.
func evenParts(n int) []part {
	k := (n + buildFill - 1) / buildFill
	parts := make([]part, k)
	start := 0
	for i := range parts {
		size := n / k
		if i < n%k {
			size++
		}
		parts[i] = part{start, start + size}
		start += size
	}
	return parts
}

// Len is the number of items.
func (t *Tree[T]) Len() int { return t.length }

// Weight is the weight of every item.
func (t *Tree[T]) Weight() int { return t.total }

func (t *Tree[T]) equal(a, b T) bool { return !t.less(a, b) && !t.less(b, a) }

// lowerBound is the index of the first item of items not less than x.
func (t *Tree[T]) lowerBound(items []T, x T) int {
	lo, hi := 0, len(items)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.less(items[m], x) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// child is the index of the child of inner node n where x is or would be.
func (t *Tree[T]) child(n *node[T], x T) int {
	lo, hi := 0, len(n.items)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.less(x, n.items[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// Get returns the item equal to x.
func (t *Tree[T]) Get(x T) (T, bool) {
	n := t.root
	for n.children != nil {
		n = n.children[t.child(n, x)]
	}
	if i := t.lowerBound(n.items, x); i < len(n.items) && !t.less(x, n.items[i]) {
		return n.items[i], true
	}
	var zero T
	return zero, false
}

// Min is the least item.
func (t *Tree[T]) Min() (T, bool) {
	n := t.root
	for n.children != nil {
		n = n.children[0]
	}
	if len(n.items) == 0 {
		var zero T
		return zero, false
	}
	return n.items[0], true
}

// Max is the greatest item.
func (t *Tree[T]) Max() (T, bool) {
	n := t.root
	for n.children != nil {
		n = n.children[len(n.children)-1]
	}
	if len(n.items) == 0 {
		var zero T
		return zero, false
	}
	return n.items[len(n.items)-1], true
}

// ReplaceOrInsert puts x in the tree and returns the item equal to it that
// it replaced, if there was one.
func (t *Tree[T]) ReplaceOrInsert(x T) (old T, replaced bool) {
	return t.Update(x, func(T, bool) T { return x })
}

// Update puts in the tree, in one descent, the item f makes of the item
// equal to x (found false when there is none), and returns what it
// replaced. f's item must be equal to x.
func (t *Tree[T]) Update(x T, f func(old T, found bool) T) (old T, replaced bool) {
	old, replaced, dw, right, sep := t.insert(t.root, x, f)
	if right != nil {
		left := t.root
		t.root = &node[T]{items: []T{sep}, children: []*node[T]{left, right}}
		t.root.counts = []int{left.count(), right.count()}
		t.root.weights = []int{t.weigh(left), t.weigh(right)}
	}
	if !replaced {
		t.length++
	}
	t.total += dw
	return old, replaced
}

// insert puts x in the subtree of n; it returns what it replaced, how the
// subtree's weight changed, and the right half of n if n had to split,
// with the item that separates the halves.
func (t *Tree[T]) insert(n *node[T], x T, f func(T, bool) T) (old T, replaced bool, dw int, right *node[T], sep T) {
	if n.children == nil {
		i := t.lowerBound(n.items, x)
		if i < len(n.items) && !t.less(x, n.items[i]) {
			old = n.items[i]
			x = f(old, true)
			n.items[i] = x
			return old, true, t.weight(x) - t.weight(old), nil, sep
		}
		x = f(old, false)
		dw = t.weight(x)
		if len(n.items) < maxItems {
			n.items = insertAt(withRoom(n.items, 1), i, x)
			return old, false, dw, nil, sep
		}
		right, sep = t.splitLeaf(n)
		if mid := len(n.items); i <= mid {
			n.items = insertAt(n.items, i, x)
		} else {
			right.items = insertAt(right.items, i-mid, x)
		}
		return old, false, dw, right, sep
	}
	i := t.child(n, x)
	old, replaced, dw, cright, csep := t.insert(n.children[i], x, f)
	n.weights[i] += dw
	if !replaced {
		n.counts[i]++
	}
	if cright != nil {
		c := n.children[i]
		n.items = insertAt(n.items, i, csep)
		n.children = insertAt(n.children, i+1, cright)
		n.counts = insertAt(n.counts, i+1, cright.count())
		n.weights = insertAt(n.weights, i+1, t.weigh(cright))
		n.counts[i], n.weights[i] = c.count(), t.weigh(c)
		if len(n.children) > maxItems {
			right, sep = t.splitInner(n)
		}
	}
	return old, replaced, dw, right, sep
}

// splitLeaf moves the upper half of n's items, a full leaf's, to a new
// leaf, each half in new room of leafRoom items.
func (t *Tree[T]) splitLeaf(n *node[T]) (*node[T], T) {
	mid := len(n.items) / 2
	right := &node[T]{items: make([]T, len(n.items)-mid, leafRoom)}
	copy(right.items, n.items[mid:])
	left := make([]T, mid, leafRoom)
	copy(left, n.items[:mid])
	n.items = left
	return right, right.items[0]
}

func (t *Tree[T]) splitInner(n *node[T]) (*node[T], T) {
	mid := len(n.children) / 2
	sep := n.items[mid-1]
	right := &node[T]{
		items:    append([]T(nil), n.items[mid:]...),
		children: append([]*node[T](nil), n.children[mid:]...),
		counts:   append([]int(nil), n.counts[mid:]...),
		weights:  append([]int(nil), n.weights[mid:]...),
	}
	clear(n.items[mid-1:])
	clear(n.children[mid:])
	n.items, n.children, n.counts, n.weights = n.items[:mid-1], n.children[:mid], n.counts[:mid], n.weights[:mid]
	return right, sep
}

// Delete removes the item equal to x and returns it.
func (t *Tree[T]) Delete(x T) (T, bool) {
	old, found := t.delete(t.root, x)
	if !found {
		return old, false
	}
	t.length--
	t.total -= t.weight(old)
	if t.root.children != nil && len(t.root.children) == 1 {
		t.root = t.root.children[0]
	}
	return old, true
}

func (t *Tree[T]) delete(n *node[T], x T) (old T, found bool) {
	if n.children == nil {
		i := t.lowerBound(n.items, x)
		if i == len(n.items) || t.less(x, n.items[i]) {
			return old, false
		}
		old = n.items[i]
		n.items = removeAt(n.items, i)
		return old, true
	}
	i := t.child(n, x)
	c := n.children[i]
	if old, found = t.delete(c, x); !found {
		return old, false
	}
	n.counts[i]--
	n.weights[i] -= t.weight(old)
	// A separator that was the deleted item would keep it (and what it
	// points to) alive: the child's new least item takes its place.
	if i > 0 && c.count() > 0 && t.equal(n.items[i-1], old) {
		n.items[i-1] = c.least()
	}
	if c.size() < minItems && len(n.children) > 1 {
		t.rebalance(n, i)
	}
	return old, true
}

// rebalance merges child i of n, which is short, with a sibling, or moves
// items from the sibling into it when both would not fit in one node.
func (t *Tree[T]) rebalance(n *node[T], i int) {
	if i == len(n.children)-1 {
		i-- // merge children i and i+1
	}
	l, r := n.children[i], n.children[i+1]
	if l.children == nil {
		if len(l.items)+len(r.items) <= maxItems {
			l.items = append(withRoom(l.items, len(r.items)), r.items...)
			t.dropChild(n, i)
			return
		}
		if k := (len(r.items) - len(l.items)) / 2; k > 0 { // r's first k to l's end
			l.items = append(withRoom(l.items, k), r.items[:k]...)
			copy(r.items, r.items[k:])
			clear(r.items[len(r.items)-k:])
			r.items = r.items[:len(r.items)-k]
		} else if k := (len(l.items) - len(r.items)) / 2; k > 0 { // l's last k to r's front
			r.items = append(withRoom(r.items, k), l.items[len(l.items)-k:]...)
			copy(r.items[k:], r.items)
			copy(r.items, l.items[len(l.items)-k:])
			clear(l.items[len(l.items)-k:])
			l.items = l.items[:len(l.items)-k]
		}
		n.items[i] = r.items[0]
	} else {
		items := append(append(append([]T(nil), l.items...), n.items[i]), r.items...)
		children := append(append([]*node[T](nil), l.children...), r.children...)
		counts := append(append([]int(nil), l.counts...), r.counts...)
		weights := append(append([]int(nil), l.weights...), r.weights...)
		if len(children) <= maxItems {
			l.items, l.children, l.counts, l.weights = items, children, counts, weights
			t.dropChild(n, i)
			return
		}
		mid := len(children) / 2
		l.items, l.children, l.counts, l.weights = items[:mid-1:mid-1], children[:mid:mid], counts[:mid:mid], weights[:mid:mid]
		n.items[i] = items[mid-1]
		r.items, r.children, r.counts, r.weights = items[mid:], children[mid:], counts[mid:], weights[mid:]
	}
	n.counts[i], n.weights[i] = l.count(), t.weigh(l)
	n.counts[i+1], n.weights[i+1] = r.count(), t.weigh(r)
}

// dropChild removes child i+1 of n, merged into child i.
func (t *Tree[T]) dropChild(n *node[T], i int) {
	l := n.children[i]
	n.items = removeAt(n.items, i)
	n.children = removeAt(n.children, i+1)
	n.counts = removeAt(n.counts, i+1)
	n.weights = removeAt(n.weights, i+1)
	n.counts[i], n.weights[i] = l.count(), t.weigh(l)
}

// size is how many items (leaf) or children (inner node) n holds.
func (n *node[T]) size() int {
	if n.children == nil {
		return len(n.items)
	}
	return len(n.children)
}

// count is how many items the subtree of n holds.
func (n *node[T]) count() int {
	if n.children == nil {
		return len(n.items)
	}
	s := 0
	for _, c := range n.counts {
		s += c
	}
	return s
}

// weigh is the weight of the subtree of n.
func (t *Tree[T]) weigh(n *node[T]) int {
	s := 0
	if n.children == nil {
		for _, it := range n.items {
			s += t.weight(it)
		}
		return s
	}
	for _, w := range n.weights {
		s += w
	}
	return s
}

// least is the least item of the subtree of n, which is not empty.
func (n *node[T]) least() T {
	for n.children != nil {
		n = n.children[0]
	}
	return n.items[0]
}

// Before returns how many items are less than x, and their weight.
func (t *Tree[T]) Before(x T) (count, weight int) {
	n := t.root
	for n.children != nil {
		i := t.child(n, x)
		for j := range i {
			count += n.counts[j]
			weight += n.weights[j]
		}
		n = n.children[i]
	}
	i := t.lowerBound(n.items, x)
	count += i
	for _, it := range n.items[:i] {
		weight += t.weight(it)
	}
	return count, weight
}

// Ascend calls fn for each item in order until fn returns false.
func (t *Tree[T]) Ascend(fn func(T) bool) { t.ascend(t.root, nil, nil, fn) }

// AscendGreaterOrEqual calls fn for each item not less than from.
func (t *Tree[T]) AscendGreaterOrEqual(from T, fn func(T) bool) { t.ascend(t.root, &from, nil, fn) }

// AscendLessThan calls fn for each item less than to.
func (t *Tree[T]) AscendLessThan(to T, fn func(T) bool) { t.ascend(t.root, nil, &to, fn) }

// AscendRange calls fn for each item in [from, to).
func (t *Tree[T]) AscendRange(from, to T, fn func(T) bool) { t.ascend(t.root, &from, &to, fn) }

// ascend calls fn for the items of n's subtree in [from, to) (nil: no
// bound) and returns false once fn has, or the range has ended.
func (t *Tree[T]) ascend(n *node[T], from, to *T, fn func(T) bool) bool {
	if n.children == nil {
		i := 0
		if from != nil {
			i = t.lowerBound(n.items, *from)
		}
		for _, it := range n.items[i:] {
			if to != nil && !t.less(it, *to) || !fn(it) {
				return false
			}
		}
		return true
	}
	i := 0
	if from != nil {
		i = t.child(n, *from)
	}
	for ; i < len(n.children); i++ {
		if to != nil && i > 0 && !t.less(n.items[i-1], *to) {
			return false
		}
		if !t.ascend(n.children[i], from, to, fn) {
			return false
		}
		from = nil // the next children hold only greater items
	}
	return true
}

func insertAt[S ~[]E, E any](s S, i int, v E) S {
	var zero E
	s = append(s, zero)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

func removeAt[S ~[]E, E any](s S, i int) S {
	copy(s[i:], s[i+1:])
	var zero E
	s[len(s)-1] = zero
	return s[:len(s)-1]
}
