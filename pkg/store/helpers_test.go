package store

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnkv/cairn/pkg/backend"
)

// openTestStore opens a store in a fresh file under t.TempDir and closes it
// at the end of the test.
func openTestStore(t testing.TB) *Store {
	t.Helper()
	return openStoreAt(t, filepath.Join(t.TempDir(), "db"))
}

func openStoreAt(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(Config{Backend: backend.Config{Path: path}, CompactionPause: time.Millisecond})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// copyFile copies src to a new file dst.
func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// fixturePath is the etcd 3.7.3 data set kept in the repository's testdata.
func fixturePath(parts ...string) string {
	return filepath.Join(append([]string{"..", "..", "testdata", "etcd-3.7.3"}, parts...)...)
}
