package forensics

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/cli/printer"
	"github.com/cairnkv/cairn/internal/cli/term"
)

// progress reports how far long work has come, on stderr, when stderr is a
// terminal; it stays silent when stderr is piped or redirected. Updates are
// throttled to a few per second and the line is erased when done.
type progress struct {
	w       io.Writer
	label   string
	total   int64
	enabled bool
	last    time.Time
	shown   bool
}

// progressInterval is the least time between two updates.
const progressInterval = 200 * time.Millisecond

// newProgress returns a progress reporter for work of total bytes. It is
// enabled when the command's stderr is a terminal and, if
// unlessStdoutTerminal is set, its stdout is not (the report would mix
// with the output).
func newProgress(cmd *cobra.Command, label string, total int64, unlessStdoutTerminal bool) *progress {
	p := &progress{w: cmd.ErrOrStderr(), label: label, total: total}
	p.enabled = term.IsTerminal(cmd.ErrOrStderr()) && !(unlessStdoutTerminal && term.IsTerminal(cmd.OutOrStdout()))
	return p
}

// update reports that done bytes of the work are done.
func (p *progress) update(done int64) {
	p.updateOf(done, p.total)
}

// updateOf reports that done bytes of total are done.
func (p *progress) updateOf(done, total int64) {
	if p == nil || !p.enabled {
		return
	}
	p.total = total
	now := time.Now()
	if now.Sub(p.last) < progressInterval {
		return
	}
	p.last = now
	pct := 100.0
	if p.total > 0 {
		pct = float64(done) * 100 / float64(p.total)
	}
	fmt.Fprintf(p.w, "\r%s: %5.1f%% (%s of %s)", p.label, pct, printer.HumanBytes(done), printer.HumanBytes(p.total))
	p.shown = true
}

// finish erases the progress line.
func (p *progress) finish() {
	if p == nil || !p.enabled || !p.shown {
		return
	}
	fmt.Fprint(p.w, "\r\033[K")
	p.shown = false
}

// fileSize returns the size of the file at path, or 0.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
