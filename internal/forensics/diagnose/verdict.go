package diagnose

import (
	"fmt"
	"slices"
)

// verdict is the conclusion drawn from all the members read.
type verdict struct {
	// commonRev is the highest revision every readable db has, at or above
	// every compacted revision; 0 when there is none (noCommon says why).
	commonRev int64
	noCommon  string
	// diverged are the members whose db hashes differently at commonRev
	// from the majority of those compacted at the same revision.
	diverged map[*member]bool
	// disagreements describe each set of dbs that differ at commonRev.
	disagreements []string
	best          *member
	bestWhy       string
	warnings      []string
}

// judge hashes the dbs at their common revision and picks the member to
// restore from.
func judge(ms []*member) *verdict {
	v := &verdict{diverged: map[*member]bool{}}
	v.compare(ms)
	v.pick(ms)
	if ids := clusterIDs(ms); len(ids) > 1 {
		v.warnings = append(v.warnings, fmt.Sprintf("the WALs name %d different clusters (%s): these dirs may not be of one cluster", len(ids), hexList(ids)))
	}
	return v
}

// compare finds the common revision and the dbs that diverge there.
func (v *verdict) compare(ms []*member) {
	var withDB []*member
	for _, m := range ms {
		if m.db != nil {
			withDB = append(withDB, m)
		}
	}
	if len(withDB) == 0 {
		v.noCommon = "no db could be read"
		return
	}
	common, maxCompact := withDB[0].db.revision, int64(0)
	for _, m := range withDB {
		common = min(common, m.db.revision)
		maxCompact = max(maxCompact, m.db.compactRevision)
	}
	if common < maxCompact {
		v.noCommon = fmt.Sprintf("the lowest revision of a db (%d) is below the highest compacted revision (%d)", common, maxCompact)
		return
	}
	v.commonRev = common
	for _, m := range withDB {
		h, err := m.db.index.HashKV(common)
		if err != nil {
			m.hashErr = err
			continue
		}
		m.hash = &h
	}
	// HashKV covers the revisions after the compacted one, so only dbs
	// compacted at the same revision can be compared.
	byCompact := map[int64][]*member{}
	var compacts []int64
	for _, m := range withDB {
		if m.hash == nil {
			continue
		}
		if _, ok := byCompact[m.db.compactRevision]; !ok {
			compacts = append(compacts, m.db.compactRevision)
		}
		byCompact[m.db.compactRevision] = append(byCompact[m.db.compactRevision], m)
	}
	if len(compacts) > 1 {
		v.warnings = append(v.warnings, fmt.Sprintf("the dbs are compacted at different revisions (%v): only those compacted at the same revision are compared", compacts))
	}
	for _, c := range compacts {
		v.compareGroup(byCompact[c])
	}
}

// compareGroup compares the hashes of dbs compacted at the same revision.
// When one hash is held by more members than any other, the others have
// diverged; with no such majority, which is right cannot be told.
func (v *verdict) compareGroup(ms []*member) {
	byHash := map[uint32][]*member{}
	var hashes []uint32
	for _, m := range ms {
		if _, ok := byHash[m.hash.Hash]; !ok {
			hashes = append(hashes, m.hash.Hash)
		}
		byHash[m.hash.Hash] = append(byHash[m.hash.Hash], m)
	}
	if len(hashes) < 2 {
		return
	}
	slices.SortStableFunc(hashes, func(a, b uint32) int { return len(byHash[b]) - len(byHash[a]) })
	desc := fmt.Sprintf("the dbs differ at revision %d:", v.commonRev)
	for _, h := range hashes {
		desc += fmt.Sprintf(" %s hash %d;", names(byHash[h]), h)
	}
	majority := len(byHash[hashes[0]]) > len(byHash[hashes[1]])
	if majority {
		for _, h := range hashes[1:] {
			for _, m := range byHash[h] {
				v.diverged[m] = true
			}
		}
		desc += fmt.Sprintf(" %s agree, the others diverged", names(byHash[hashes[0]]))
	} else {
		desc += " no majority agrees: which is right cannot be told from the dbs"
	}
	v.disagreements = append(v.disagreements, desc)
}

// pick chooses the member to restore from: one with a readable db that
// has not diverged; an undamaged WAL first, then the most committed data
// (the higher of the WAL's commit and the db's consistent index), then
// the least damage, then the higher revision, then the order given.
func (v *verdict) pick(ms []*member) {
	var cands []*member
	for _, m := range ms {
		if m.db != nil && !v.diverged[m] {
			cands = append(cands, m)
		}
	}
	if len(cands) == 0 {
		v.bestWhy = "no member has a readable db that agrees with the others: nothing to restore from"
		return
	}
	slices.SortStableFunc(cands, func(a, b *member) int {
		switch {
		case a.walHealthy() != b.walHealthy():
			return boolOrder(a.walHealthy())
		case a.reach() != b.reach():
			return cmpDesc(a.reach(), b.reach())
		case a.damage() != b.damage():
			return a.damage() - b.damage()
		case a.revision() != b.revision():
			return cmpDesc(a.revision(), b.revision())
		}
		return 0
	})
	v.best = cands[0]
	v.bestWhy = fmt.Sprintf("it has the most committed data (index %d) of the members with an undamaged WAL and a db that agrees with the others", v.best.reach())
	if !v.best.walHealthy() {
		v.bestWhy = fmt.Sprintf("no member with a readable db has an undamaged WAL; of those, it has the most committed data (index %d)", v.best.reach())
		v.warnings = append(v.warnings, fmt.Sprintf("the chosen member %s has a damaged WAL: check what `cairn wal verify %s` says", label(v.best), v.best.dir))
	}
	if len(cands) > 1 && cands[1].walHealthy() == v.best.walHealthy() && cands[1].reach() == v.best.reach() && cands[1].damage() == v.best.damage() {
		v.bestWhy += fmt.Sprintf("; %s (%s) has as much, either will do", label(cands[1]), cands[1].dir)
	}
}

// loss is what restoring from m loses compared with the best member.
type loss struct {
	entries   uint64 // committed entries the best has and m lacks
	revisions int64  // revisions the best's db has and m's lacks
	diverged  bool
	noDB      bool
	locked    bool
	// bestUnapplied are the best's committed entries its db lacks: their
	// revisions are not counted in revisions.
	bestUnapplied uint64
}

func (v *verdict) lossOf(m *member) loss {
	l := loss{diverged: v.diverged[m], noDB: m.db == nil, locked: m.locked}
	if v.best == nil || m == v.best {
		return l
	}
	if r := v.best.reach(); r > m.reach() {
		l.entries = r - m.reach()
	}
	if r := v.best.revision(); r > m.revision() {
		l.revisions = r - m.revision()
	}
	if u := v.best.unapplied; u != nil && l.entries > 0 {
		l.bestUnapplied = u.count()
	}
	return l
}

func (l loss) text() string {
	switch {
	case l.locked:
		return "not known: a running member holds its db"
	case l.noDB:
		return "cannot restore from it: no readable db"
	case l.diverged:
		return "its db diverged from the others: restoring from it would spread what differs"
	case l.entries == 0 && l.revisions == 0:
		return "nothing"
	}
	s := fmt.Sprintf("%d committed entries, %d revisions", l.entries, l.revisions)
	if l.bestUnapplied > 0 {
		s += fmt.Sprintf(" (of the chosen db; its WAL's %d unapplied entries may write more)", l.bestUnapplied)
	}
	return s
}

func boolOrder(aFirst bool) int {
	if aFirst {
		return -1
	}
	return 1
}

func cmpDesc[T ~uint64 | ~int64](a, b T) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

func clusterIDs(ms []*member) []uint64 {
	var ids []uint64
	for _, m := range ms {
		if id := m.clusterID(); id != 0 && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

func hexList(ids []uint64) string {
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%x", id)
	}
	return s
}

// label names a member for the verdict: its name, else its ID, else its dir.
func label(m *member) string {
	switch {
	case m.name() != "":
		return m.name()
	case m.memberID() != 0:
		return fmt.Sprintf("%x", m.memberID())
	}
	return m.dir
}

func names(ms []*member) string {
	s := ""
	for i, m := range ms {
		if i > 0 {
			s += ", "
		}
		s += label(m)
	}
	return s
}
