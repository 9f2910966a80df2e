package diagnose

import (
	"fmt"
	"slices"
)

// report is the whole diagnosis, as `-w json` prints it; the human output
// is written from it too.
type report struct {
	Members          []memberJSON  `json:"members"`
	CommonRevision   int64         `json:"common_revision"`
	NoCommonRevision string        `json:"no_common_revision,omitempty"`
	Divergence       []string      `json:"divergence,omitempty"`
	Best             *bestJSON     `json:"best"`
	Warnings         []string      `json:"warnings,omitempty"`
	RestoreSteps     []string      `json:"restore_steps,omitempty"`
	Restores         []restoreStep `json:"restores,omitempty"`
}

type memberJSON struct {
	Dir       string `json:"dir"`
	MemberID  string `json:"member_id"` // hex, as the logs and wal verify write it
	Name      string `json:"name,omitempty"`
	ClusterID string `json:"cluster_id,omitempty"`

	WAL      *walJSON `json:"wal,omitempty"`
	WALError string   `json:"wal_error,omitempty"`
	// CommittedIndex is the WAL's HardState commit.
	CommittedIndex uint64 `json:"committed_index"`
	SnapshotIndex  uint64 `json:"snapshot_index"`

	// AppliedIndex is the db's consistent index.
	AppliedIndex    uint64 `json:"applied_index"`
	DBTerm          uint64 `json:"db_term"`
	Revision        int64  `json:"revision"`
	CompactRevision int64  `json:"compact_revision"`
	DBError         string `json:"db_error,omitempty"`
	DBLocked        bool   `json:"db_locked,omitempty"`

	HashKV       *uint32 `json:"hash_kv,omitempty"`
	HashRevision int64   `json:"hash_revision,omitempty"`
	HashError    string  `json:"hash_error,omitempty"`
	Diverged     bool    `json:"diverged"`

	Unapplied *unappliedJSON `json:"unapplied,omitempty"`
	Loss      lossJSON       `json:"loss"`
}

type walJSON struct {
	Dir          string   `json:"dir"`
	Segments     int      `json:"segments"`
	FirstIndex   uint64   `json:"first_index"`
	LastIndex    uint64   `json:"last_index"`
	LastTerm     uint64   `json:"last_term"`
	Term         uint64   `json:"term"`
	Vote         string   `json:"vote"`
	Healthy      bool     `json:"healthy"`
	TornTailOnly bool     `json:"torn_tail_only,omitempty"`
	Problems     []string `json:"problems,omitempty"`
}

type unappliedJSON struct {
	First   uint64         `json:"first"`
	Last    uint64         `json:"last"`
	Count   uint64         `json:"count"`
	InWAL   int            `json:"in_wal"`
	Kinds   map[string]int `json:"kinds"`
	Summary string         `json:"summary"`
}

type lossJSON struct {
	Entries   uint64 `json:"entries"`
	Revisions int64  `json:"revisions"`
	Summary   string `json:"summary"`
}

type bestJSON struct {
	Dir      string `json:"dir"`
	Name     string `json:"name,omitempty"`
	MemberID string `json:"member_id"`
	Why      string `json:"why"`
}

func newReport(ms []*member, v *verdict, p *plan) *report {
	r := &report{CommonRevision: v.commonRev, NoCommonRevision: v.noCommon, Divergence: v.disagreements,
		Warnings: slices.Clone(v.warnings)}
	for _, m := range ms {
		r.Members = append(r.Members, newMemberJSON(m, v))
	}
	if v.best != nil {
		r.Best = &bestJSON{Dir: v.best.dir, Name: v.best.name(), MemberID: fmt.Sprintf("%x", v.best.memberID()), Why: v.bestWhy}
	} else {
		r.Warnings = append(r.Warnings, v.bestWhy)
	}
	if p != nil {
		r.RestoreSteps, r.Restores = p.steps, p.restores
	}
	return r
}

func newMemberJSON(m *member, v *verdict) memberJSON {
	j := memberJSON{Dir: m.dir, MemberID: fmt.Sprintf("%x", m.memberID()), Name: m.name(), Diverged: v.diverged[m],
		CommittedIndex: m.commit(), AppliedIndex: m.applied(), Revision: m.revision()}
	if id := m.clusterID(); id != 0 {
		j.ClusterID = fmt.Sprintf("%x", id)
	}
	if w := m.wal; w != nil {
		j.WAL = &walJSON{Dir: w.Dir, Segments: w.Segments, FirstIndex: w.FirstIndex, LastIndex: w.LastIndex, LastTerm: w.LastTerm,
			Term: w.Term, Vote: fmt.Sprintf("%x", w.Vote), Healthy: w.Healthy(), TornTailOnly: w.TornTailOnly, Problems: w.Problems}
		j.SnapshotIndex = max(w.SnapshotIndex, w.SnapFileIndex)
	}
	if m.walErr != nil {
		j.WALError = m.walErr.Error()
	}
	if d := m.db; d != nil {
		j.DBTerm, j.CompactRevision = d.term, d.compactRevision
	}
	if m.dbErr != nil {
		j.DBError, j.DBLocked = dbErrorText(m), m.locked
	}
	if m.hash != nil {
		j.HashKV, j.HashRevision = &m.hash.Hash, m.hash.HashRevision
	}
	if m.hashErr != nil {
		j.HashError = m.hashErr.Error()
	}
	if u := m.unapplied; u != nil {
		j.Unapplied = &unappliedJSON{First: u.first, Last: u.last, Count: u.count(), InWAL: u.found, Kinds: u.kinds, Summary: u.text()}
	}
	l := v.lossOf(m)
	j.Loss = lossJSON{Entries: l.entries, Revisions: l.revisions, Summary: l.text()}
	return j
}

// dbErrorText says why the db could not be read; a locked one is held by
// a running member, as dump-db says.
func dbErrorText(m *member) string {
	if m.locked {
		return fmt.Sprintf("%v: stop the member and run diagnose again", m.dbErr)
	}
	return m.dbErr.Error()
}
