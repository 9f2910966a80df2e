package bench

import (
	"bytes"
	"testing"
)

func TestRenderBar(t *testing.T) {
	for _, c := range []struct {
		done, of int
		want     string
	}{
		{0, 60, "0 / 60 [>_________] 0.00%"},
		{15, 60, "15 / 60 [-->_______] 25.00%"},
		{59, 60, "59 / 60 [--------->] 98.33%"},
		{60, 60, "60 / 60 [----------] 100.00%"},
		{70, 60, "60 / 60 [----------] 100.00%"},
	} {
		if got := renderBar(c.done, c.of, 10); got != c.want {
			t.Errorf("renderBar(%d, %d) = %q, want %q", c.done, c.of, got, c.want)
		}
	}
}

func TestProgressBarSilentOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	b := newProgressBar(&buf)
	b.update(1, 2)
	b.update(2, 2)
	b.finish()
	if buf.Len() != 0 {
		t.Fatalf("progress drawn on a non-terminal: %q", buf.String())
	}
}
