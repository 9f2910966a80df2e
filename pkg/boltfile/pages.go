package boltfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// More facts of the bbolt format, for CheckPages: page flags, the
// 16-byte element headers of branch and leaf pages, and the 16-byte bucket
// header a leaf stores as the value of a nested bucket (an inline bucket's
// page follows it when its root is 0).
const (
	boltBranchPageFlag = 0x01
	boltLeafPageFlag   = 0x02
	boltElementSize    = 16
	boltBucketLeafFlag = 0x01
	boltBucketHeader   = 16
)

// CheckPages walks the b+tree of the bbolt file at path from its
// newest meta page, reading the file (never mapping it), and checks that
// every page reached is a branch or leaf page that says it is the page it
// was reached as, lies within the file and is reached once. It returns the
// first problem with the page number and offset. bbolt itself panics on
// such pages, and when it opens a file for writing it walks them in a
// goroutine of its own, where the panic cannot be recovered: check first.
func CheckPages(path string) error {
	meta, err := checkFile(path)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("check db %s: %w", path, err)
	}
	defer f.Close()
	w := &pageWalker{r: f, path: path, pageSize: int64(meta.PageSize), highWater: meta.HighWater,
		seen: make([]uint64, (meta.HighWater+63)/64)}
	return w.walk(meta.RootPage, "the root bucket")
}

type pageWalker struct {
	r         io.ReaderAt
	path      string
	pageSize  int64
	highWater uint64
	seen      []uint64 // bitset of pages reached
}

// corrupt formats a problem at page id.
func (w *pageWalker) corrupt(id uint64, format string, args ...any) error {
	return fmt.Errorf("db %s: %w: page %d (offset %d), %s", w.path, ErrCorrupt, id, int64(id)*w.pageSize, fmt.Sprintf(format, args...))
}

// walk checks page id, reached from what, and everything below it.
func (w *pageWalker) walk(id uint64, from string) error {
	if id < 2 || id >= w.highWater {
		return w.corrupt(id, "reached from %s, is outside the pages in use (2-%d)", from, w.highWater-1)
	}
	if w.seen[id/64]&(1<<(id%64)) != 0 {
		return w.corrupt(id, "reached from %s, is reached twice", from)
	}
	w.seen[id/64] |= 1 << (id % 64)
	hdr := make([]byte, boltPageHeaderSize)
	if _, err := w.r.ReadAt(hdr, int64(id)*w.pageSize); err != nil {
		return w.corrupt(id, "reached from %s, cannot be read: %v", from, err)
	}
	le := binary.LittleEndian
	if self := le.Uint64(hdr); self != id {
		return w.corrupt(id, "reached from %s, identifies itself as page %d (flags %#x): zeroed or overwritten", from, self, le.Uint16(hdr[8:]))
	}
	overflow := uint64(le.Uint32(hdr[12:]))
	if id+overflow >= w.highWater {
		return w.corrupt(id, "reached from %s, overflows past the pages in use (%d more pages)", from, overflow)
	}
	for o := id + 1; o <= id+overflow; o++ {
		w.seen[o/64] |= 1 << (o % 64)
	}
	page := make([]byte, int64(overflow+1)*w.pageSize)
	if _, err := w.r.ReadAt(page, int64(id)*w.pageSize); err != nil {
		return w.corrupt(id, "reached from %s, cannot be read: %v", from, err)
	}
	return w.walkPage(page, id, from)
}

// walkPage checks the elements of a branch or leaf page (its bytes in
// page) and walks what they reference.
func (w *pageWalker) walkPage(page []byte, id uint64, from string) error {
	le := binary.LittleEndian
	flags, count := le.Uint16(page[8:]), int(le.Uint16(page[10:]))
	if boltPageHeaderSize+count*boltElementSize > len(page) {
		return w.corrupt(id, "reached from %s, holds %d elements, more than fit in it", from, count)
	}
	switch flags {
	case boltBranchPageFlag:
		for i := 0; i < count; i++ {
			el := page[boltPageHeaderSize+i*boltElementSize:]
			child := le.Uint64(el[8:])
			if err := w.walk(child, fmt.Sprintf("branch page %d", id)); err != nil {
				return err
			}
		}
	case boltLeafPageFlag:
		for i := 0; i < count; i++ {
			off := boltPageHeaderSize + i*boltElementSize
			el := page[off:]
			elFlags, pos, ksize, vsize := le.Uint32(el), int(le.Uint32(el[4:])), int(le.Uint32(el[8:])), int(le.Uint32(el[12:]))
			start := off + pos
			if pos < 0 || start+ksize+vsize > len(page) || start+ksize+vsize < start {
				return w.corrupt(id, "reached from %s, element %d points past the page", from, i)
			}
			if elFlags&boltBucketLeafFlag == 0 {
				continue
			}
			name, value := page[start:start+ksize], page[start+ksize:start+ksize+vsize]
			if err := w.walkBucket(value, id, fmt.Sprintf("bucket %q on page %d", name, id)); err != nil {
				return err
			}
		}
	default:
		return w.corrupt(id, "reached from %s, has flags %#x, neither a branch nor a leaf page", from, flags)
	}
	return nil
}

// walkBucket walks the bucket whose header is value, found on page id.
func (w *pageWalker) walkBucket(value []byte, id uint64, what string) error {
	if len(value) < boltBucketHeader {
		return w.corrupt(id, "%s has a %d-byte header", what, len(value))
	}
	root := binary.LittleEndian.Uint64(value)
	if root != 0 {
		return w.walk(root, what)
	}
	inline := value[boltBucketHeader:]
	if len(inline) < boltPageHeaderSize {
		return w.corrupt(id, "%s is inline but holds no page", what)
	}
	return w.walkPage(inline, id, what+" (inline)")
}
