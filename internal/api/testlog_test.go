package api

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// testLog returns a logger that shows an in-process member's warnings and
// errors (an HTTP handler's panic among them) in the test's output, until
// the test's cleanups that were registered after it have run.
func testLog(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.close)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}
