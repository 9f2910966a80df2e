// Package progress shows how far long work has come, on one line of a
// terminal that it rewrites in place: the offline kit's scans and copies,
// and snapshot save's download. It shows nothing when its writer is piped
// or redirected, where the line would only clutter a file.
package progress

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/cliutil/printer"
	"github.com/cairnkv/cairn/internal/cliutil/term"
)

// Bytes reports work measured in bytes.
type Bytes struct {
	w       io.Writer
	label   string
	total   int64
	enabled bool
	start   time.Time
	last    time.Time
	shown   bool
}

// interval is the least time between two updates.
const interval = 200 * time.Millisecond

// New returns a reporter for work of total bytes, labelled label, that
// writes on w if enabled.
func New(w io.Writer, label string, total int64, enabled bool) *Bytes {
	return &Bytes{w: w, label: label, total: total, enabled: enabled, start: time.Now()}
}

// ForCommand returns a reporter on the command's stderr, enabled when
// stderr is a terminal and, if unlessStdoutTerminal is set, stdout is not
// (the report would mix with the output).
func ForCommand(cmd *cobra.Command, label string, total int64, unlessStdoutTerminal bool) *Bytes {
	enabled := term.IsTerminal(cmd.ErrOrStderr()) && !(unlessStdoutTerminal && term.IsTerminal(cmd.OutOrStdout()))
	return New(cmd.ErrOrStderr(), label, total, enabled)
}

// Update reports that done bytes of the work are done.
func (p *Bytes) Update(done int64) {
	p.UpdateOf(done, p.total)
}

// UpdateOf reports that done bytes of total are done.
func (p *Bytes) UpdateOf(done, total int64) {
	if p == nil || !p.enabled {
		return
	}
	p.total = total
	now := time.Now()
	if now.Sub(p.last) < interval {
		return
	}
	p.last = now
	fmt.Fprint(p.w, "\r"+Line(p.label, done, p.total, now.Sub(p.start)))
	p.shown = true
}

// Line is the text of a report: the label, the share done, the bytes done
// of the total and, once some time has passed, the rate.
func Line(label string, done, total int64, elapsed time.Duration) string {
	pct := 100.0
	if total > 0 {
		pct = float64(done) * 100 / float64(total)
	}
	s := fmt.Sprintf("%s: %5.1f%% (%s of %s", label, pct, printer.HumanBytes(done), printer.HumanBytes(total))
	if done > 0 && elapsed >= interval {
		s += ", " + Rate(done, elapsed)
	}
	return s + ")"
}

// Rate is "12 MB/s": n bytes in elapsed.
func Rate(n int64, elapsed time.Duration) string {
	if elapsed <= 0 {
		return "? B/s"
	}
	return printer.HumanBytes(int64(float64(n)/elapsed.Seconds())) + "/s"
}

// Finish erases the report's line.
func (p *Bytes) Finish() {
	if p == nil || !p.enabled || !p.shown {
		return
	}
	fmt.Fprint(p.w, "\r\033[K")
	p.shown = false
}
