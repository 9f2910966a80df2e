package keyindex

import "sort"

// changeLog is the index's recent changes, oldest first: the key's history
// and the revision of each put and tombstone since from. With it, how many
// keys of a range exist at a past revision is how many exist now (the
// index's counted tree answers that in O(log n)) corrected by the changes
// made since: a page of a list at the revision of its first page costs the
// changes since that revision, not a walk of the rest of the range.
type changeLog struct {
	changes []change
	limit   int // changes kept at most
	// from: every change after it (main revision) is in changes.
	from int64
}

type change struct {
	rev Revision
	ki  *keyIndex
}

// maxChanges bounds the log (24 bytes a change): a read further back than
// that many changes counts by walking its range.
const maxChanges = 1 << 17

func (l *changeLog) add(rev Revision, ki *keyIndex) {
	if len(l.changes) >= l.limit {
		l.drop(max(1, l.limit/2))
	}
	l.changes = append(l.changes, change{rev, ki})
}

// drop forgets the n oldest changes.
func (l *changeLog) drop(n int) {
	l.from = max(l.from, l.changes[n-1].rev.Main)
	kept := copy(l.changes, l.changes[n:])
	clear(l.changes[kept:]) // the keyIndexes of compacted keys go
	l.changes = l.changes[:kept]
}

// forget drops the changes at or before a compaction at atRev: no read
// goes back that far.
func (l *changeLog) forget(atRev int64) {
	if n := l.firstAfter(atRev); n > 0 {
		l.drop(n)
	}
	l.from = max(l.from, atRev)
}

// skip records that the changes up to rev were made without the log (the
// index rebuilt from the backend at a start).
func (l *changeLog) skip(rev int64) {
	l.changes = l.changes[:0]
	l.from = max(l.from, rev)
}

// firstAfter is the index of the first change after main revision atRev.
func (l *changeLog) firstAfter(atRev int64) int {
	return sort.Search(len(l.changes), func(i int) bool { return l.changes[i].rev.Main > atRev })
}

// since returns the changes after atRev, or false when the log does not go
// back that far.
func (l *changeLog) since(atRev int64) ([]change, bool) {
	if atRev < l.from {
		return nil, false
	}
	return l.changes[l.firstAfter(atRev):], true
}

// existenceChange is how many more keys of [key, end) exist after changes
// than at atRev, the revision just before the first of them: each key
// changed counts once, at its first change after atRev.
func existenceChange(changes []change, key, end []byte, atRev int64) int {
	d := 0
	for _, c := range changes {
		ki := c.ki
		if !inRange(asBytes(ki.key), key, end) || ki.firstChangeAfter(atRev) != c.rev {
			continue
		}
		_, _, _, then := ki.get(atRev)
		switch now := ki.liveSince() != 0; {
		case now && !then:
			d++
		case then && !now:
			d--
		}
	}
	return d
}

// inRange reports whether k is in [key, end) as a range request means it:
// end empty is key alone, end "\x00" every key from key on.
func inRange(k, key, end []byte) bool {
	switch {
	case len(end) == 0:
		return string(k) == string(key)
	case IsInfiniteEnd(end):
		return string(k) >= string(key)
	}
	return string(k) >= string(key) && string(k) < string(end)
}
