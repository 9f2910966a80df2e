package boltfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fixturePath is the etcd 3.7.3 data set kept in the repository's testdata.
func fixturePath(parts ...string) string {
	return filepath.Join(append([]string{"..", "..", "testdata", "etcd-3.7.3"}, parts...)...)
}

// TestFixtureChecks: the files etcd 3.7.3 wrote pass the page checks, open
// read-only and hash.
func TestFixtureChecks(t *testing.T) {
	for _, p := range []string{fixturePath("data", "member", "snap", "db"), fixturePath("snapshot.db")} {
		if err := CheckPages(p); err != nil {
			t.Error(err)
		}
	}
	db, err := Open(fixturePath("data", "member", "snap", "db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	names, err := db.Buckets()
	if err != nil || len(names) == 0 {
		t.Errorf("Buckets = %v, %v", names, err)
	}
	if _, err := db.Hash(nil); err != nil {
		t.Error(err)
	}
}

func TestCheckBoltFileDiagnoses(t *testing.T) {
	src, err := os.ReadFile(fixturePath("data", "member", "snap", "db"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := checkFile(write("empty", nil)); !errors.Is(err, ErrNotBolt) {
		t.Errorf("empty file: %v", err)
	}
	if _, err := checkFile(write("text", []byte("hello, this is not a database at all"))); !errors.Is(err, ErrNotBolt) {
		t.Errorf("text file: %v", err)
	}
	if _, err := checkFile(write("short", src[:12000])); !errors.Is(err, ErrTruncated) {
		t.Errorf("truncated file: %v", err)
	}
	// One damaged meta page: the other one serves.
	oneMeta := append([]byte(nil), src...)
	oneMeta[20] ^= 0xff
	if _, err := checkFile(write("onemeta", oneMeta)); err != nil {
		t.Errorf("one good meta page: %v", err)
	}
}

// FuzzCheckPages feeds arbitrary files to the meta and page checks:
// they must return, never panic or read out of bounds.
func FuzzCheckPages(f *testing.F) {
	src, err := os.ReadFile(fixturePath("data", "member", "snap", "db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(src)
	f.Add(src[:8192])
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "db")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		CheckPages(p)
	})
}
