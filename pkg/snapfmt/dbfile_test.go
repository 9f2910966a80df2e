package snapfmt

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"path/filepath"
	"testing"
)

// fixtureDB is the output of `etcdctl snapshot save` against etcd 3.7.3
// (a copy of the repository's testdata/etcd-3.7.3/snapshot.db).
const fixtureDB = "testdata/snapshot.db"

func TestFixtureDBTrailer(t *testing.T) {
	orig := readFile(t, fixtureDB)
	if len(orig) != 28704 || !HasTrailer(int64(len(orig))) {
		t.Fatalf("fixture of %d bytes: trailer %v", len(orig), HasTrailer(int64(len(orig))))
	}
	if err := VerifyTrailer(fixtureDB); err != nil {
		t.Fatal(err)
	}
	var copied bytes.Buffer
	if err := CopyDB(&copied, bytes.NewReader(orig), int64(len(orig)), true); err != nil {
		t.Fatal(err)
	}
	db := copied.Bytes()
	if len(db) != 28672 || !bytes.Equal(db, orig[:28672]) || HasTrailer(int64(len(db))) {
		t.Errorf("copied db of %d bytes", len(db))
	}
	sum := sha256.Sum256(db)
	if !bytes.Equal(sum[:], orig[28672:]) {
		t.Error("trailer is not the sha256 of the db")
	}
	// The copy is a bbolt file: its first meta page has the magic.
	if magic := binary.LittleEndian.Uint32(db[16:]); magic != 0xED0CDAED {
		t.Errorf("no bbolt magic: %#x", magic)
	}
	dst := filepath.Join(t.TempDir(), "db")
	writeFile(t, dst, db)
	if err := VerifyTrailer(dst); !errors.Is(err, ErrNoTrailer) {
		t.Errorf("file without trailer: %v", err)
	}
	if err := CopyDB(io.Discard, bytes.NewReader(db), int64(len(db)), true); !errors.Is(err, ErrNoTrailer) {
		t.Errorf("checked copy without trailer: %v", err)
	}
	var whole bytes.Buffer
	if err := CopyDB(&whole, bytes.NewReader(db), int64(len(db)), false); err != nil || !bytes.Equal(whole.Bytes(), db) {
		t.Errorf("unchecked copy of a db without trailer: %d bytes, %v", whole.Len(), err)
	}
}

// TestDBTrailerMismatch: a changed byte fails the check, not a copy
// without it.
func TestDBTrailerMismatch(t *testing.T) {
	b := readFile(t, fixtureDB)
	b[5000] ^= 0xff
	src := filepath.Join(t.TempDir(), "snapshot.db")
	writeFile(t, src, b)
	if err := VerifyTrailer(src); !errors.Is(err, ErrTrailerMismatch) {
		t.Errorf("verify: %v", err)
	}
	if err := CopyDB(io.Discard, bytes.NewReader(b), int64(len(b)), true); !errors.Is(err, ErrTrailerMismatch) {
		t.Errorf("checked copy: %v", err)
	}
	var copied bytes.Buffer
	if err := CopyDB(&copied, bytes.NewReader(b), int64(len(b)), false); err != nil || !bytes.Equal(copied.Bytes(), b[:len(b)-TrailerSize]) {
		t.Errorf("unchecked copy: %d bytes, %v", copied.Len(), err)
	}
}

func TestHasTrailer(t *testing.T) {
	for size, want := range map[int64]bool{0: false, 32: true, 4096: false, 4096 + 32: true, 4096 + 31: false, 512*7 + 32: true} {
		if HasTrailer(size) != want {
			t.Errorf("HasTrailer(%d) = %v", size, !want)
		}
	}
}

// TestTrailerCheck: etcdctl's snapshot of etcd 3.7.3 written in pieces of
// every size from 1 byte to the whole file is valid, and its FileSum is the
// file's sha256; with any one byte changed, or cut short, it is not valid.
func TestTrailerCheck(t *testing.T) {
	file := readFile(t, fixtureDB)
	written := func(b []byte, piece int) *TrailerCheck {
		c := NewTrailerCheck()
		for len(b) > 0 {
			n := min(piece, len(b))
			c.Write(b[:n])
			b = b[n:]
		}
		return c
	}
	write := func(b []byte, piece int) bool { return written(b, piece).Valid() }
	whole := sha256.Sum256(file)
	for _, piece := range []int{1, 31, 32, 33, 4096, len(file)} {
		c := written(file, piece)
		if !c.Valid() {
			t.Errorf("the fixture in pieces of %d bytes is not valid", piece)
		}
		if sum := c.FileSum(); !bytes.Equal(sum, whole[:]) {
			t.Errorf("the fixture in pieces of %d bytes: FileSum %x, the file's sha256 %x", piece, sum, whole)
		}
		if !c.Valid() {
			t.Errorf("the fixture in pieces of %d bytes is not valid after FileSum", piece)
		}
	}
	for _, at := range []int{0, len(file) / 2, len(file) - TrailerSize - 1, len(file) - TrailerSize, len(file) - 1} {
		changed := bytes.Clone(file)
		changed[at] ^= 1
		if write(changed, 4096) {
			t.Errorf("the fixture with byte %d changed is valid", at)
		}
	}
	for _, cut := range []int{1, TrailerSize, len(file) - TrailerSize + 1} {
		if write(file[:len(file)-cut], 4096) {
			t.Errorf("the fixture without its last %d bytes is valid", cut)
		}
	}
}
