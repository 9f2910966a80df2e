package diagnose

import (
	"bufio"
	"fmt"
	"io"
)

// writeHuman writes the report for an operator: one section per member,
// then the verdict and the commands.
func writeHuman(out io.Writer, r *report) error {
	w := bufio.NewWriter(out)
	for _, m := range r.Members {
		writeMember(w, &m, r.CommonRevision)
		fmt.Fprintln(w)
	}
	writeVerdict(w, r)
	return w.Flush()
}

func writeMember(w *bufio.Writer, m *memberJSON, commonRev int64) {
	title := m.Dir
	if m.Name != "" {
		title = m.Name + " (" + m.Dir + ")"
	}
	fmt.Fprintf(w, "== member %s\n", title)
	line := func(k, format string, a ...any) {
		fmt.Fprintf(w, "  %-24s "+format+"\n", append([]any{k + ":"}, a...)...)
	}
	line("member ID", "%s", orUnknown(m.MemberID != "0", m.MemberID))
	line("name", "%s", orUnknown(m.Name != "", m.Name))
	line("cluster ID", "%s", orUnknown(m.ClusterID != "", m.ClusterID))
	switch {
	case m.WAL != nil:
		wl := m.WAL
		line("wal", "%d segment(s), entries %d-%d, last index %d term %d", wl.Segments, wl.FirstIndex, wl.LastIndex, wl.LastIndex, wl.LastTerm)
		line("hard state", "commit %d, term %d, vote %s", m.CommittedIndex, wl.Term, wl.Vote)
		if wl.Healthy {
			line("wal damage", "none")
		} else {
			line("wal damage", "%d problem(s)%s", len(wl.Problems), tornHint(wl.TornTailOnly))
			for _, p := range wl.Problems {
				fmt.Fprintf(w, "    - %s\n", p)
			}
		}
	case m.WALError != "":
		line("wal", "UNREADABLE: %s", m.WALError)
	}
	line("latest snapshot", "index %d", m.SnapshotIndex)
	if m.DBError != "" {
		if m.DBLocked {
			line("db", "LOCKED, a running member holds it: %s", m.DBError)
		} else {
			line("db", "UNREADABLE: %s", m.DBError)
		}
	} else {
		line("db", "consistent index %d, term %d", m.AppliedIndex, m.DBTerm)
		line("revisions", "current %d, compacted %d", m.Revision, m.CompactRevision)
	}
	switch {
	case m.HashKV != nil:
		div := ""
		if m.Diverged {
			div = "  DIVERGED from the others"
		}
		line(fmt.Sprintf("hashkv at revision %d", commonRev), "%d%s", *m.HashKV, div)
	case m.HashError != "":
		line("hashkv", "failed: %s", m.HashError)
	}
	if u := m.Unapplied; u != nil {
		line("committed, not applied", "%s", u.Summary)
	} else if m.WAL != nil && m.DBError == "" {
		line("committed, not applied", "none")
	}
}

func tornHint(torn bool) string {
	if torn {
		return " (only a torn tail, as a crash leaves it: `cairn wal repair` can cut it off)"
	}
	return ""
}

func orUnknown(known bool, s string) string {
	if known {
		return s
	}
	return "unknown"
}

func writeVerdict(w *bufio.Writer, r *report) {
	fmt.Fprintln(w, "== verdict")
	if b := r.Best; b != nil {
		name := b.Dir
		if b.Name != "" {
			name = b.Name + " (" + b.Dir + ")"
		}
		fmt.Fprintf(w, "  restore from: %s\n  because:      %s\n", name, b.Why)
	}
	switch {
	case r.NoCommonRevision != "":
		fmt.Fprintf(w, "  divergence:   not checked: %s\n", r.NoCommonRevision)
	case len(r.Divergence) == 0:
		fmt.Fprintf(w, "  divergence:   none: the dbs hash the same at revision %d\n", r.CommonRevision)
	default:
		for _, d := range r.Divergence {
			fmt.Fprintf(w, "  divergence:   %s\n", d)
		}
	}
	fmt.Fprintln(w, "  restoring from each loses:")
	for _, m := range r.Members {
		name := m.Dir
		if m.Name != "" {
			name = m.Name + " (" + m.Dir + ")"
		}
		fmt.Fprintf(w, "    %s: %s\n", name, m.Loss.Summary)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "  warning:      %s\n", warn)
	}
	if len(r.RestoreSteps) > 0 {
		fmt.Fprintln(w, "\n== commands to rebuild the cluster from it")
		for _, s := range r.RestoreSteps {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
}
