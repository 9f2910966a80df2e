package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cairnkv/cairn/internal/cliutil/term"
)

// progressBar draws "done / of [---->____] 12.34%" on one line of a
// terminal, as etcdctl's check commands and etcd's benchmark do, and stays
// silent when its writer is not a terminal.
type progressBar struct {
	w       io.Writer
	enabled bool
	width   int

	mu    sync.Mutex
	last  time.Time
	shown bool
}

// progressBarInterval is the least time between two redraws.
const progressBarInterval = 100 * time.Millisecond

func newProgressBar(w io.Writer) *progressBar {
	return &progressBar{w: w, enabled: term.IsTerminal(w), width: 50}
}

// update redraws the bar for done of of, at most every progressBarInterval
// unless the work is complete.
func (b *progressBar) update(done, of int) {
	if b == nil || !b.enabled || of <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if done < of && now.Sub(b.last) < progressBarInterval {
		return
	}
	b.last, b.shown = now, true
	fmt.Fprint(b.w, "\r"+renderBar(done, of, b.width))
}

// renderBar is the text of a bar width cells wide.
func renderBar(done, of, width int) string {
	done = min(max(done, 0), of)
	filled := done * width / of
	var cells string
	switch {
	case filled >= width:
		cells = strings.Repeat("-", width)
	default:
		cells = strings.Repeat("-", filled) + ">" + strings.Repeat("_", width-filled-1)
	}
	return fmt.Sprintf("%d / %d [%s] %.2f%%", done, of, cells, float64(done)*100/float64(of))
}

// finish ends the bar's line.
func (b *progressBar) finish() {
	if b == nil || !b.enabled {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shown {
		fmt.Fprintln(b.w)
		b.shown = false
	}
}
