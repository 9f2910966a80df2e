package robustness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A member that exits by itself is reported with the last line it wrote
// since its start, not one of an earlier start.
func TestLastLogLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m1.log")
	first := "=== start\nserving\n"
	if err := os.WriteFile(path, []byte(first+"=== start\nlisten tcp 127.0.0.1:20001: bind: address already in use\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := lastLogLine(path, int64(len(first))); !strings.Contains(got, "address already in use") {
		t.Errorf("last line %q", got)
	}
	if got := lastLogLine(path, int64(len(first)+len("=== start\nlisten tcp 127.0.0.1:20001: bind: address already in use\n"))); got != "(nothing)" {
		t.Errorf("after the end: %q", got)
	}
	long := strings.Repeat("x", 10000)
	if err := os.WriteFile(path, []byte(long+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := lastLogLine(path, 0); len(got) != 400 {
		t.Errorf("a long line is cut to 400 characters, got %d", len(got))
	}
}
