package boltfile

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/cairnkv/cairn/pkg/writebehind"
)

// More facts of the bbolt format, for writing a file: the page id a meta
// page gives as its freelist when the freelist is not stored (bbolt
// rebuilds it when it opens the file), and the fewest elements bbolt puts
// in a page it splits off (elements that do not fit in one page overflow
// into the pages after it).
const (
	boltNoFreelist     = ^uint64(0)
	boltMinKeysPerPage = 2
)

// compactBufferBytes is the buffer CompactTo writes through.
const compactBufferBytes = 1 << 20

// CompactTo copies every bucket of src, keys in order into full pages, to
// a new bbolt file at dst (which must not exist), syncs it and closes it.
// src is only read, through one read transaction: the copy is of one point
// in time even if src is written meanwhile. A copy that did not return nil
// must be thrown away.
//
// The copy writes the pages itself, one after the other, leaves first, in
// bbolt's format: bbolt's own write path (a transaction's nodes, their
// keys cloned, spilled and split into pages) allocated three times the
// bytes it copied, and the garbage collections that caused, over a member's
// whole heap, held up its requests for tens of milliseconds at a time
// during an online defragmentation. Here the keys and values go from src's
// mapped pages to the file without a copy in memory.
//
// The file is synced every writebehind.DefaultInterval bytes, beside the copy
// (package writebehind): left to one sync at the end, hundreds of megabytes
// went out at once, and a member's writes waited for them.
//
// With shareDisk, the copy leaves the disk idle after each sync for as
// long as the sync took, for a member's WAL to use while it defragments
// online: at full speed, the WAL's fsyncs of a member holding 10 million
// keys waited up to 120 ms behind the copy's writes.
func CompactTo(src *bolt.DB, dst string, mode os.FileMode, shareDisk bool) error {
	stx, err := src.Begin(false)
	if err != nil {
		return fmt.Errorf("compact: read %s: %w", src.Path(), err)
	}
	defer stx.Rollback()
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("compact: create %s: %w", dst, err)
	}
	w := newPageWriter(f, src.Info().PageSize, shareDisk)
	err = w.copyDB(stx)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("compact %s into %s: %w", src.Path(), dst, err)
	}
	return nil
}

// pageWriter writes a bbolt file front to back: pages 0 and 1 (the meta
// pages) are left for last, every other page is written once, in the order
// of its id.
type pageWriter struct {
	f        *os.File
	synced   *writebehind.Writer // f, synced as it is written
	out      *bufio.Writer       // in front of synced
	pageSize int
	next     uint64 // the id of the next page written
	scratch  []byte
}

func newPageWriter(f *os.File, pageSize int, shareDisk bool) *pageWriter {
	synced := writebehind.New(f, writebehind.DefaultInterval, shareDisk)
	return &pageWriter{f: f, synced: synced, out: bufio.NewWriterSize(synced, compactBufferBytes),
		pageSize: pageSize, scratch: make([]byte, pageSize)}
}

// copyDB writes every bucket of tx, then the meta pages, and syncs the file.
func (w *pageWriter) copyDB(tx *bolt.Tx) error {
	defer w.synced.Close() // a no-op after the Close below
	// Room for the meta pages, written at the end.
	clear(w.scratch)
	for range 2 {
		if _, err := w.out.Write(w.scratch); err != nil {
			return err
		}
	}
	w.next = 2
	root := newTreeWriter(w)
	err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		header, err := w.copyBucket(b)
		if err != nil {
			return fmt.Errorf("bucket %q: %w", name, err)
		}
		return root.add(name, header, boltBucketLeafFlag)
	})
	if err != nil {
		return err
	}
	rootPage, err := root.finish()
	if err != nil {
		return err
	}
	if err := w.out.Flush(); err != nil {
		return err
	}
	for id := range uint64(2) {
		if _, err := w.f.WriteAt(w.metaPage(id, rootPage), int64(id)*int64(w.pageSize)); err != nil {
			return err
		}
	}
	return w.synced.Close()
}

// copyBucket writes the pages of bucket b and of the buckets nested in it,
// and returns b's header: its root page and sequence, the value its parent
// stores for it.
func (w *pageWriter) copyBucket(b *bolt.Bucket) ([]byte, error) {
	t := newTreeWriter(w)
	cur := b.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		var err error
		if v == nil { // a nested bucket
			var header []byte
			if header, err = w.copyBucket(b.Bucket(k)); err == nil {
				err = t.add(k, header, boltBucketLeafFlag)
			}
		} else {
			// k and v point into src's pages, which stay mapped while
			// its read transaction is open: t may keep them until it
			// writes their page.
			err = t.add(k, v, 0)
		}
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
	}
	// The header: the root page, 0 for a bucket kept inline as bbolt keeps
	// a small one (its page follows the header), and the sequence.
	var root uint64
	var inline bytes.Buffer
	var err error
	if t.inline() {
		err = w.encodePage(&inline, 0, 0, false, t.levels[0].filling.els)
	} else {
		root, err = t.finish()
	}
	if err != nil {
		return nil, err
	}
	header := binary.LittleEndian.AppendUint64(make([]byte, 0, boltBucketHeader+inline.Len()), root)
	header = binary.LittleEndian.AppendUint64(header, b.Sequence())
	return append(header, inline.Bytes()...), nil
}

// writePage writes page p at the next id (with as many overflow pages as
// it needs) and returns that id.
func (w *pageWriter) writePage(branch bool, p *page) (uint64, error) {
	size := p.size()
	pages := (size + w.pageSize - 1) / w.pageSize
	id := w.next
	if err := w.encodePage(w.out, id, pages-1, branch, p.els); err != nil {
		return 0, err
	}
	pad := w.scratch[:pages*w.pageSize-size]
	clear(pad)
	if _, err := w.out.Write(pad); err != nil {
		return 0, err
	}
	w.next += uint64(pages)
	return id, nil
}

// encodePage writes page id, a branch or leaf page of els, to out: its
// header, the elements' headers, their keys and values.
func (w *pageWriter) encodePage(out io.Writer, id uint64, overflow int, branch bool, els []element) error {
	if len(els) > 0xffff {
		return errors.New("more elements than a page counts")
	}
	le := binary.LittleEndian
	hdr := w.scratch[:boltPageHeaderSize]
	le.PutUint64(hdr, id)
	flags := uint16(boltLeafPageFlag)
	if branch {
		flags = boltBranchPageFlag
	}
	le.PutUint16(hdr[8:], flags)
	le.PutUint16(hdr[10:], uint16(len(els)))
	le.PutUint32(hdr[12:], uint32(overflow))
	if _, err := out.Write(hdr); err != nil {
		return err
	}
	// An element's pos counts from the element itself to its key.
	pos := len(els) * boltElementSize
	el := w.scratch[:boltElementSize]
	for i, e := range els {
		at := uint32(pos - i*boltElementSize)
		if branch {
			le.PutUint32(el, at)
			le.PutUint32(el[4:], uint32(len(e.key)))
			le.PutUint64(el[8:], e.page)
		} else {
			le.PutUint32(el, e.flags)
			le.PutUint32(el[4:], at)
			le.PutUint32(el[8:], uint32(len(e.key)))
			le.PutUint32(el[12:], uint32(len(e.value)))
		}
		if _, err := out.Write(el); err != nil {
			return err
		}
		pos += len(e.key) + len(e.value)
	}
	for _, e := range els {
		if _, err := out.Write(e.key); err != nil {
			return err
		}
		if _, err := out.Write(e.value); err != nil {
			return err
		}
	}
	return nil
}

// metaPage is meta page id of the file, whose root bucket's tree is at
// page root: every page written is in use, and the freelist is left to
// bbolt to rebuild.
func (w *pageWriter) metaPage(id, root uint64) []byte {
	p := make([]byte, w.pageSize)
	le := binary.LittleEndian
	le.PutUint64(p, id)
	le.PutUint16(p[8:], boltMetaPageFlag)
	m := p[boltPageHeaderSize:]
	le.PutUint32(m[0:], boltMagic)
	le.PutUint32(m[4:], boltVersion)
	le.PutUint32(m[8:], uint32(w.pageSize))
	le.PutUint64(m[16:], root) // the root bucket: its page, sequence 0
	le.PutUint64(m[32:], boltNoFreelist)
	le.PutUint64(m[40:], w.next)
	le.PutUint64(m[48:], id) // the transaction: bbolt reads the meta page of the higher one
	h := fnv.New64a()
	h.Write(m[:boltMetaChecksumAt])
	le.PutUint64(m[boltMetaChecksumAt:], h.Sum64())
	return p
}

// element is one element of a page being filled: a leaf's key and value
// (flags say whether it is a nested bucket), or a branch's key and child.
type element struct {
	flags      uint32
	key, value []byte
	page       uint64
}

// size is the bytes e takes in its page: its header, key and value.
func (e element) size() int { return boltElementSize + len(e.key) + len(e.value) }

// treeWriter writes the b+tree of one bucket, its keys given in order:
// levels[0] fills leaf pages; a page that is full is written, and its first
// key and id go up to the branch level above, which fills and writes its
// pages the same way. Like bbolt, which splits a node so that every page
// holds at least boltMinKeysPerPage elements, a level holds its last full
// page back until the page after it is full too: at the end, a last page
// with fewer elements joins it.
type treeWriter struct {
	w      *pageWriter
	levels []*treeLevel
}

// treeLevel is a level of the tree being written. A level above it exists
// once it has written a page.
type treeLevel struct{ filling, held page }

// page is the elements of a page and the bytes they take in it.
type page struct {
	els     []element
	payload int
}

func (p *page) add(e element) {
	p.els = append(p.els, e)
	p.payload += e.size()
}

// size is the bytes of the page: its header and its elements.
func (p *page) size() int { return boltPageHeaderSize + p.payload }

func newTreeWriter(w *pageWriter) *treeWriter {
	return &treeWriter{w: w, levels: []*treeLevel{{}}}
}

// add adds an element to the leaves.
func (t *treeWriter) add(key, value []byte, flags uint32) error {
	return t.addElement(0, element{flags: flags, key: key, value: value})
}

func (t *treeWriter) addElement(level int, e element) error {
	l := t.levels[level]
	if len(l.filling.els) >= boltMinKeysPerPage && l.filling.size()+e.size() > t.w.pageSize {
		if len(l.held.els) > 0 {
			if err := t.writePage(level, &l.held); err != nil {
				return err
			}
		}
		l.held, l.filling = l.filling, l.held
	}
	l.filling.add(e)
	return nil
}

// writePage writes p, a page of level, empties it and adds it to the
// level above.
func (t *treeWriter) writePage(level int, p *page) error {
	id, err := t.w.writePage(level > 0, p)
	if err != nil {
		return err
	}
	first := p.els[0].key
	p.els, p.payload = p.els[:0], 0
	if level+1 == len(t.levels) {
		t.levels = append(t.levels, &treeLevel{})
	}
	return t.addElement(level+1, element{key: first, page: id})
}

// inline reports whether the bucket fits in a quarter of a page, in one
// leaf without nested buckets: bbolt stores such a bucket inside the
// value its parent holds for it, with no page of its own.
func (t *treeWriter) inline() bool {
	l := t.levels[0]
	if len(t.levels) > 1 || len(l.held.els) > 0 || l.filling.size() > t.w.pageSize/4 {
		return false
	}
	for _, e := range l.filling.els {
		if e.flags&boltBucketLeafFlag != 0 {
			return false
		}
	}
	return true
}

// finish writes the pages still being filled and returns the root page.
func (t *treeWriter) finish() (uint64, error) {
	for level := 0; ; level++ {
		l := t.levels[level]
		if len(l.held.els) == 0 && level == len(t.levels)-1 {
			// The top level has written no page and fits in one (an empty
			// leaf, for an empty bucket): the root.
			return t.w.writePage(level > 0, &l.filling)
		}
		if len(l.held.els) > 0 {
			if len(l.filling.els) < boltMinKeysPerPage {
				for _, e := range l.filling.els {
					l.held.add(e)
				}
				l.filling = page{}
			}
			if err := t.writePage(level, &l.held); err != nil {
				return 0, err
			}
		}
		if len(l.filling.els) > 0 {
			if err := t.writePage(level, &l.filling); err != nil {
				return 0, err
			}
		}
	}
}
