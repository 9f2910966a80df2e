package progress

import (
	"bytes"
	"testing"
	"time"
)

func TestBytes(t *testing.T) {
	var buf bytes.Buffer
	p := New(&buf, "copy", 2000, true)
	p.Update(1000)
	p.Update(1500) // within the interval: not shown
	p.Finish()
	if got := buf.String(); got != "\rcopy:  50.0% (1.0 kB of 2.0 kB)\r\x1b[K" {
		t.Errorf("progress wrote %q", got)
	}
	buf.Reset()
	p = New(&buf, "copy", 2000, false)
	p.Update(1000)
	p.Finish()
	if buf.Len() != 0 {
		t.Errorf("disabled progress wrote %q", buf.String())
	}
}

func TestLine(t *testing.T) {
	for _, c := range []struct {
		done, total int64
		elapsed     time.Duration
		want        string
	}{
		{0, 22_000_000, 0, "save:   0.0% (0 B of 22 MB)"},
		{11_000_000, 22_000_000, 2 * time.Second, "save:  50.0% (11 MB of 22 MB, 5.5 MB/s)"},
		{33_000, 22_000_000, 100 * time.Millisecond, "save:   0.1% (33 kB of 22 MB)"}, // too soon for a rate
		{500, 0, time.Second, "save: 100.0% (500 B of 0 B, 500 B/s)"},
	} {
		if got := Line("save", c.done, c.total, c.elapsed); got != c.want {
			t.Errorf("Line(%d, %d, %s) = %q, want %q", c.done, c.total, c.elapsed, got, c.want)
		}
	}
}
