package livediag

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// WriteText writes the report for a person: a line on the cluster, a row
// per member, then the verdicts, problems first.
func (r Report) WriteText(w io.Writer) error {
	leader := r.Leader
	if leader == "" {
		leader = "none"
	}
	fmt.Fprintf(w, "%d members, leader %s at term %d, sampled for %s\n\n", len(r.Members), leader, r.Term, r.Window)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tID\tENDPOINT\tROLE\tRAFT INDEX\tAPPLIED\tLAG\tDB SIZE\tIN USE\tQUOTA\tFSYNC P99\tCOMMIT P99\tVERSION\tHASHKV")
	for _, m := range r.Members {
		if !m.Answered {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\tdoes not answer\t\t\t\t\t\t\t\t\t\n", m.Name, m.ID, m.Endpoint, m.Role)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%.1f ms\t%.1f ms\t%s\t%s\n", m.Name, m.ID, m.Endpoint, m.Role,
			m.RaftIndex, m.AppliedIndex, m.Lag, printer.HumanBytes(m.DBSize), printer.HumanBytes(m.DBSizeInUse), printer.HumanBytes(m.Quota), m.FsyncP99MS, m.CommitP99MS, m.Version, m.HashKV)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, v := range r.Verdicts {
		line := fmt.Sprintf("%-8s %s", strings.ToUpper(string(v.Severity)), v.Text)
		if v.Evidence != "" {
			line += " (" + v.Evidence + ")"
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}
