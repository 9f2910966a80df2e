package auth

import (
	"bytes"
	"slices"

	"go.etcd.io/etcd/api/v3/authpb"
)

// interval is the key range [begin, end); a nil end is unbounded.
type interval struct {
	begin, end []byte
}

// less orders ends: nil (unbounded) is the greatest.
func endLess(a, b []byte) bool {
	switch {
	case a == nil:
		return false
	case b == nil:
		return true
	}
	return bytes.Compare(a, b) < 0
}

// permInterval is the key range a permission covers: one key when it has no
// range end, every key from Key on when its range end is "\x00", else
// [Key, RangeEnd).
func permInterval(key, rangeEnd []byte) interval {
	switch {
	case len(rangeEnd) == 0:
		return interval{begin: key, end: append(bytes.Clone(key), 0)}
	case len(rangeEnd) == 1 && rangeEnd[0] == 0:
		return interval{begin: key}
	}
	return interval{begin: key, end: rangeEnd}
}

// rangeSet is a union of key ranges, as sorted, disjoint, non-adjacent
// intervals, so that a range is covered by the union exactly when it lies
// within one of them.
type rangeSet []interval

// newRangeSet merges intervals into a rangeSet.
func newRangeSet(ivs []interval) rangeSet {
	ivs = slices.Clone(ivs)
	slices.SortFunc(ivs, func(a, b interval) int { return bytes.Compare(a.begin, b.begin) })
	var out rangeSet
	for _, iv := range ivs {
		if n := len(out); n > 0 && (out[n-1].end == nil || bytes.Compare(iv.begin, out[n-1].end) <= 0) {
			if endLess(out[n-1].end, iv.end) {
				out[n-1].end = iv.end
			}
			continue
		}
		out = append(out, iv)
	}
	return out
}

// find returns the interval whose begin is the greatest at or below key.
func (s rangeSet) find(key []byte) (interval, bool) {
	i, found := slices.BinarySearchFunc(s, key, func(iv interval, k []byte) int { return bytes.Compare(iv.begin, k) })
	if found {
		return s[i], true
	}
	if i == 0 {
		return interval{}, false
	}
	return s[i-1], true
}

// containsKey reports whether key is in the set.
func (s rangeSet) containsKey(key []byte) bool {
	iv, ok := s.find(key)
	return ok && (iv.end == nil || bytes.Compare(key, iv.end) < 0)
}

// containsRange reports whether every key of [begin, end) is in the set; a
// nil end is unbounded.
func (s rangeSet) containsRange(begin, end []byte) bool {
	iv, ok := s.find(begin)
	if !ok {
		return false
	}
	return !endLess(iv.end, end) && (iv.end == nil || bytes.Compare(begin, iv.end) < 0)
}

// userPerms are the key ranges a user may read and write, merged over its
// roles.
type userPerms struct {
	read, write rangeSet
}

// newUserPerms merges the permissions of roles.
func newUserPerms(roles []*authpb.Role) *userPerms {
	var read, write []interval
	for _, r := range roles {
		for _, p := range r.GetKeyPermission() {
			iv := permInterval(p.GetKey(), p.GetRangeEnd())
			switch p.GetPermType() {
			case authpb.READ:
				read = append(read, iv)
			case authpb.WRITE:
				write = append(write, iv)
			case authpb.READWRITE:
				read = append(read, iv)
				write = append(write, iv)
			}
		}
	}
	return &userPerms{read: newRangeSet(read), write: newRangeSet(write)}
}

// allows reports whether the permissions grant typ on the key, or on the
// range [key, rangeEnd) when rangeEnd is given ("\x00": every key from key
// on).
func (p *userPerms) allows(typ authpb.Permission_Type, key, rangeEnd []byte) bool {
	set := p.read
	if typ == authpb.WRITE {
		set = p.write
	}
	switch {
	case len(rangeEnd) == 0:
		return set.containsKey(key)
	case len(rangeEnd) == 1 && rangeEnd[0] == 0:
		return set.containsRange(key, nil)
	case bytes.Compare(rangeEnd, key) <= 0:
		// An empty range: it reaches no key, but says which it starts at.
		return set.containsKey(key)
	}
	return set.containsRange(key, rangeEnd)
}

// validPermRange reports whether a permission's range is one etcd accepts:
// a key, and a range end that is absent, "\x00" or past the key.
func validPermRange(key, rangeEnd []byte) bool {
	if len(key) == 0 {
		return false
	}
	if len(rangeEnd) == 0 || (len(rangeEnd) == 1 && rangeEnd[0] == 0) {
		return true
	}
	return bytes.Compare(key, rangeEnd) < 0
}
