// Package boltfile reads bbolt data files for offline tools: the meta
// pages and the page tree checked without bbolt (which panics, or crashes
// the process, on a damaged file), a file opened read-only with damage
// returned as errors, and the hash of its buckets. It is about the bbolt
// file format, not what the buckets hold (pkg/store), and imports nothing
// of the module.
package boltfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// Facts of the bbolt file format that the checks need: the two meta
// pages at the start of the file, each a 16-byte page header followed by the
// meta fields, little-endian on the platforms bbolt supports.
const (
	boltMagic          = 0xED0CDAED
	boltVersion        = 2
	boltPageHeaderSize = 16
	boltMetaSize       = 64 // magic .. checksum
	boltMetaChecksumAt = 56 // the checksum covers the meta bytes before it
	boltMetaPageFlag   = 0x04
	boltMinPageSize    = 512
	boltMaxPageSize    = 64 << 10
	boltFallbackPage   = 4096 // where bbolt looks for meta page 1 when page 0 is unusable
)

// metaPage is what a valid bbolt meta page says about its file.
type metaPage struct {
	// Page is the meta page it was read from (0 or 1).
	Page int
	// PageSize is the size of every page of the file.
	PageSize uint32
	// RootPage is the page of the root bucket.
	RootPage uint64
	// HighWater is the number of pages in use: the file must hold at least
	// HighWater*PageSize bytes.
	HighWater uint64
	// TxID is the transaction that wrote the meta page.
	TxID uint64
}

// ErrNotBolt: the file is not a bbolt file (no valid meta page).
var ErrNotBolt = errors.New("not a bbolt file")

// ErrTruncated: the file is shorter than its meta page says.
var ErrTruncated = errors.New("bbolt file is truncated")

// checkFile reads the two meta pages of the bbolt file at path, without
// opening it as a database, and returns the newest valid one. It fails with
// ErrNotBolt when neither meta page is valid and with ErrTruncated when
// the file is shorter than the pages the newest meta page counts: bbolt maps
// the file into memory, and reading a page past its end would crash the
// process instead of returning an error.
func checkFile(path string) (metaPage, error) {
	f, err := os.Open(path)
	if err != nil {
		return metaPage{}, fmt.Errorf("check db %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return metaPage{}, fmt.Errorf("check db %s: %w", path, err)
	}
	size := st.Size()

	m0, err0 := readMeta(f, 0, 0)
	pageSize := int64(boltFallbackPage)
	if err0 == nil {
		pageSize = int64(m0.PageSize)
	}
	m1, err1 := readMeta(f, 1, pageSize)
	var best metaPage
	switch {
	case err0 != nil && err1 != nil:
		if size == 0 {
			return metaPage{}, fmt.Errorf("db %s: %w: the file is empty", path, ErrNotBolt)
		}
		return metaPage{}, fmt.Errorf("db %s: %w: meta page 0: %v; meta page 1: %v", path, ErrNotBolt, err0, err1)
	case err0 != nil:
		best = m1
	case err1 != nil:
		best = m0
	case m1.TxID > m0.TxID:
		best = m1
	default:
		best = m0
	}
	need := int64(best.HighWater) * int64(best.PageSize)
	if best.HighWater > uint64(size)/uint64(best.PageSize) {
		return best, fmt.Errorf("db %s: %w: meta page %d counts %d pages of %d bytes (%d bytes) but the file has %d bytes",
			path, ErrTruncated, best.Page, best.HighWater, best.PageSize, need, size)
	}
	return best, nil
}

// readMeta reads and validates meta page n, which starts at n*pageSize.
func readMeta(r io.ReaderAt, n int, pageSize int64) (metaPage, error) {
	buf := make([]byte, boltPageHeaderSize+boltMetaSize)
	if _, err := r.ReadAt(buf, int64(n)*pageSize); err != nil {
		if errors.Is(err, io.EOF) {
			return metaPage{}, errors.New("file too short")
		}
		return metaPage{}, err
	}
	le := binary.LittleEndian
	if flags := le.Uint16(buf[8:]); flags&boltMetaPageFlag == 0 {
		return metaPage{}, fmt.Errorf("page flags %#x are not a meta page's", flags)
	}
	meta := buf[boltPageHeaderSize:]
	if magic := le.Uint32(meta[0:]); magic != boltMagic {
		return metaPage{}, fmt.Errorf("bad magic %#x", magic)
	}
	if v := le.Uint32(meta[4:]); v != boltVersion {
		return metaPage{}, fmt.Errorf("unsupported version %d", v)
	}
	h := fnv.New64a()
	h.Write(meta[:boltMetaChecksumAt])
	if sum, stored := h.Sum64(), le.Uint64(meta[boltMetaChecksumAt:]); sum != stored {
		return metaPage{}, fmt.Errorf("checksum %#x does not match the stored %#x", sum, stored)
	}
	m := metaPage{
		Page:      n,
		PageSize:  le.Uint32(meta[8:]),
		RootPage:  le.Uint64(meta[16:]),
		HighWater: le.Uint64(meta[40:]),
		TxID:      le.Uint64(meta[48:]),
	}
	if m.PageSize < boltMinPageSize || m.PageSize > boltMaxPageSize || m.PageSize&(m.PageSize-1) != 0 {
		return metaPage{}, fmt.Errorf("implausible page size %d", m.PageSize)
	}
	return m, nil
}
