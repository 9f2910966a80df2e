package snapfmt

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"os"
)

// A snapshot db file (the output of `snapshot save`) is the bbolt file as the
// Maintenance.Snapshot stream sent it, followed by the sha256 of those bytes.

// TrailerSize is the size of the sha256 trailer of a snapshot db file.
const TrailerSize = sha256.Size

// HasTrailer reports whether a snapshot db file of this size carries a sha256
// trailer, as etcd decides it: a bbolt file is a whole number of pages, so its
// size is a multiple of 512, and 32 more means a trailer.
func HasTrailer(size int64) bool { return size%512 == TrailerSize }

// VerifyTrailer checks the sha256 trailer of the snapshot db file at path,
// reading it once, in constant memory.
func VerifyTrailer(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("verify snapshot db %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("verify snapshot db %s: %w", path, err)
	}
	if err := copyVerified(io.Discard, f, st.Size()); err != nil {
		return fmt.Errorf("verify snapshot db %s: %w", path, err)
	}
	return nil
}

// TrailerCheck hashes a snapshot db file as it is written to it, all but
// its last TrailerSize bytes, the trailer, which it keeps aside: for a
// stream whose size is known only once it ends.
type TrailerCheck struct {
	hash hash.Cloner
	tail []byte // the last bytes written, up to TrailerSize of them
}

// NewTrailerCheck returns a TrailerCheck with nothing written yet.
func NewTrailerCheck() *TrailerCheck { return &TrailerCheck{hash: sha256.New().(hash.Cloner)} }

func (t *TrailerCheck) Write(b []byte) (int, error) {
	t.tail = append(t.tail, b...)
	if extra := len(t.tail) - TrailerSize; extra > 0 {
		t.hash.Write(t.tail[:extra])
		t.tail = append(t.tail[:0], t.tail[extra:]...)
	}
	return len(b), nil
}

// Valid says whether what was written ends with a trailer, the sha256 of
// what precedes it.
func (t *TrailerCheck) Valid() bool {
	return len(t.tail) == TrailerSize && bytes.Equal(t.hash.Sum(nil), t.tail)
}

// FileSum returns the sha256 of everything written, the trailer included
// (the file's, as sha256sum shows it), from the hash of what precedes the
// trailer: the file is hashed once, not twice.
func (t *TrailerCheck) FileSum() []byte {
	h, err := t.hash.Clone()
	if err != nil {
		panic(err) // crypto/sha256 clones without error
	}
	h.Write(t.tail)
	return h.Sum(nil)
}

// copyVerified copies the db part of a snapshot db file of size bytes from r
// to w and checks the trailer that follows it.
func copyVerified(w io.Writer, r io.Reader, size int64) error {
	if !HasTrailer(size) {
		return fmt.Errorf("%w: size %d", ErrNoTrailer, size)
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(w, h), r, size-TrailerSize); err != nil {
		return err
	}
	return checkTrailer(h, r)
}

func checkTrailer(h hash.Hash, r io.Reader) error {
	var trailer [TrailerSize]byte
	if _, err := io.ReadFull(r, trailer[:]); err != nil {
		return fmt.Errorf("read trailer: %w", err)
	}
	if sum := h.Sum(nil); !bytes.Equal(sum, trailer[:]) {
		return fmt.Errorf("%w: trailer %x, db hashes to %x", ErrTrailerMismatch, trailer, sum)
	}
	return nil
}

// CopyDB copies the bbolt file inside a snapshot db file of size bytes
// from r to w: all of it but the trailer. With check, the trailer must be
// there and be the sha256 of what precedes it (ErrNoTrailer,
// ErrTrailerMismatch); without, a trailer is left unread, and a file
// without one (a db copied out of a data directory) is copied whole.
func CopyDB(w io.Writer, r io.Reader, size int64, check bool) error {
	if check {
		return copyVerified(w, r, size)
	}
	if HasTrailer(size) {
		size -= TrailerSize
	}
	_, err := io.CopyN(w, r, size)
	return err
}
