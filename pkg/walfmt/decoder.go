package walfmt

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Item is one record read from a WAL, with where it was found.
type Item struct {
	// Segment is the file the record is in.
	Segment Segment
	// Offset is the byte offset of the record's frame in the file.
	Offset int64
	// FrameSize is the frame's size: length word, record and padding.
	FrameSize int64
	// Record is the record as stored. Its CRC has been checked against the
	// chain, except for the record that starts a chain: the first record
	// read when the first segment is not sequence 0, and the first after a
	// missing segment or a resynchronisation.
	Record
	// Payload is the decoded Record.Data.
	Payload
}

// DecoderOptions tune a Decoder.
type DecoderOptions struct {
	// VerifyTail makes the decoder read on after the zero length word that ends
	// each segment and report ErrDataAfterTail if anything but zeros follows.
	VerifyTail bool
	// SkipEntries leaves entry records undecoded (their Payload is empty)
	// and reads them into one buffer, which the next call to Next reuses:
	// for a reader that wants only the other records, and their CRCs
	// checked (raft entries are most of a WAL's bytes and of the time
	// taken to decode it).
	SkipEntries bool
}

// Decoder reads the records of a sequence of segments one at a time, in
// constant memory (one record at a time). It checks the frame structure, the
// CRC chain, that each segment starts with a crc and a metadata record, and
// that segment sequence numbers have no gaps.
//
// Next returns io.EOF at the end. Any other error is an *Error locating the
// damage; the decoder has then already moved past it, and calling Next again
// continues with the next trustworthy frame: the frame after a crc mismatch,
// the next frame in the same file that continues a CRC chain after a torn or
// garbled frame, or the next segment. Records after such a resynchronisation
// start a new chain (their own crc cannot be checked). A record with a bad crc
// is never returned.
type Decoder struct {
	segs []Segment
	opts DecoderOptions

	next    int // index in segs of the next segment to open
	cur     Segment
	f       *os.File
	size    int64
	br      *bufio.Reader
	off     int64 // offset of the next frame in f
	records int   // records read from the current segment
	damaged bool  // damage was reported in the current segment

	crc        uint32
	chainKnown bool

	resyncFrom  int64   // >= 0: find the next trustworthy frame from here first
	pending     *Item   // a good record held back behind a structural error
	pendingErrs []error // errors found together with the one returned, still to report
	endOffset   int64   // where the frames of the last segment read end
	scratch     [frameHeaderSize]byte
	entryBuf    []byte // the frame buffer reused with SkipEntries
}

// NewDecoder returns a decoder over segs, which must be ordered by sequence.
func NewDecoder(segs []Segment, opts DecoderOptions) *Decoder {
	return &Decoder{segs: segs, opts: opts, resyncFrom: -1, endOffset: -1}
}

// OpenDecoder lists the segments in dir and returns a decoder over them. It
// fails only if the directory cannot be read or holds no segment; badly named
// .wal files are reported by the decoder's first calls to Next, as *Error
// values with reason ErrBadFileName, before the records.
func OpenDecoder(dir string, opts DecoderOptions) (*Decoder, error) {
	segs, badNames, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("open wal %s: %w", dir, errors.Join(append([]error{ErrNoWAL}, badNames...)...))
	}
	d := NewDecoder(segs, opts)
	d.pendingErrs = badNames
	return d, nil
}

// Close releases the open file, if any.
func (d *Decoder) Close() error {
	if d.f == nil {
		return nil
	}
	err := d.f.Close()
	d.f = nil
	return err
}

// CRC returns the running CRC after the last record returned.
func (d *Decoder) CRC() uint32 { return d.crc }

// EndOffset returns, once Next has returned io.EOF, the offset at which the
// frames of the last segment end (where an appender continues); -1 before.
func (d *Decoder) EndOffset() int64 { return d.endOffset }

// Next returns the next record, or io.EOF after the last one.
func (d *Decoder) Next() (*Item, error) {
	if len(d.pendingErrs) > 0 {
		err := d.pendingErrs[0]
		d.pendingErrs = d.pendingErrs[1:]
		return nil, err
	}
	if it := d.pending; it != nil {
		d.pending = nil
		return it, nil
	}
	for {
		if d.f == nil {
			if d.next >= len(d.segs) {
				return nil, io.EOF
			}
			if err := d.openNext(); err != nil {
				return nil, err
			}
		}
		if d.resyncFrom >= 0 {
			if err := d.resync(); err != nil {
				return nil, err
			}
			if d.f == nil {
				continue
			}
		}
		it, err := d.readFrame()
		if errors.Is(err, io.EOF) {
			d.endOffset = d.off
			short := d.records < 2 && !d.damaged
			if cerr := d.Close(); cerr != nil {
				return nil, newError(d.cur.Path, -1, ErrIO, cerr)
			}
			if short {
				return nil, newError(d.cur.Path, d.endOffset, ErrBadSegmentStart,
					fmt.Errorf("segment ends after %d records", d.records))
			}
			continue
		}
		if err != nil {
			d.damaged = true
		}
		return it, err
	}
}

func (d *Decoder) openNext() error {
	seg := d.segs[d.next]
	d.next++
	var seqErr error
	if d.next > 1 {
		seqErr = checkSequence(d.cur, seg)
	}
	d.cur, d.off, d.records, d.damaged, d.endOffset = seg, 0, 0, false, -1
	switch {
	case seg.Seq == 0:
		// The chain of a WAL starts at 0 in its first segment.
		d.crc, d.chainKnown = 0, true
	case seqErr != nil:
		d.chainKnown = false
	}
	f, err := os.Open(seg.Path)
	if err != nil {
		d.chainKnown = false
		return d.report(seqErr, newError(seg.Path, -1, ErrIO, err))
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		d.chainKnown = false
		return d.report(seqErr, newError(seg.Path, -1, ErrIO, err))
	}
	d.f, d.size = f, st.Size()
	d.seek(0)
	return seqErr
}

// report returns first if it is set and keeps second for the next call to
// Next; otherwise it returns second.
func (d *Decoder) report(first, second error) error {
	if first == nil {
		return second
	}
	d.pendingErrs = append(d.pendingErrs, second)
	return first
}

func (d *Decoder) seek(off int64) {
	d.off = off
	sr := io.NewSectionReader(d.f, off, d.size-off)
	if d.br == nil {
		d.br = bufio.NewReaderSize(sr, 1<<20)
	} else {
		d.br.Reset(sr)
	}
}

func (d *Decoder) resync() error {
	from := d.resyncFrom
	d.resyncFrom = -1
	off, err := findFrameStart(d.f, from, d.size)
	if err != nil {
		_ = d.Close()
		return newError(d.cur.Path, from, ErrIO, err)
	}
	if off < 0 {
		// Nothing trustworthy left in this file: the frames end where the damage began.
		return d.Close()
	}
	d.chainKnown = false
	d.seek(off)
	return nil
}

// fail records damage at off and arranges for reading to go on from resumeAt.
func (d *Decoder) fail(reason error, off, resumeAt int64, cause error) error {
	d.resyncFrom = resumeAt
	d.endOffset = off
	return newError(d.cur.Path, off, reason, cause)
}

// readFrame reads and checks one frame; io.EOF means the segment's frames ended.
func (d *Decoder) readFrame() (*Item, error) {
	off := d.off
	hdr := d.scratch[:]
	n, err := io.ReadFull(d.br, hdr)
	if err != nil {
		if errors.Is(err, io.EOF) || (errors.Is(err, io.ErrUnexpectedEOF) && allZero(hdr[:n])) {
			return nil, io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, d.fail(ErrTornFrame, off, d.size, fmt.Errorf("length word cut short after %d bytes", n))
		}
		return nil, d.fail(ErrIO, off, d.size, err)
	}
	word := binary.LittleEndian.Uint64(hdr)
	if word == 0 {
		return nil, d.endOfFrames(off)
	}
	length, pad, err := DecodeFrameHeader(word)
	if err != nil {
		return nil, d.fail(ErrBadFrame, off, off+frameHeaderSize, err)
	}
	frameSize := frameHeaderSize + length + int64(pad)
	if off+frameSize > d.size {
		return nil, d.fail(ErrTornFrame, off, off+frameHeaderSize,
			fmt.Errorf("frame of %d bytes, %d left in file: %w", frameSize, d.size-off, io.ErrUnexpectedEOF))
	}
	var buf []byte
	if d.opts.SkipEntries {
		if int64(cap(d.entryBuf)) < length+int64(pad) {
			d.entryBuf = make([]byte, length+int64(pad))
		}
		buf = d.entryBuf[:length+int64(pad)]
	} else {
		buf = make([]byte, length+int64(pad))
	}
	if _, err := io.ReadFull(d.br, buf); err != nil {
		return nil, d.fail(ErrIO, off, off+frameHeaderSize, err)
	}
	d.off = off + frameSize
	rec, err := UnmarshalRecord(buf[:length])
	if err != nil {
		return nil, d.fail(d.tornOr(ErrBadRecord, buf[:length], off+frameHeaderSize), off, off+frameHeaderSize, err)
	}
	if d.chainKnown {
		if want := Chain(d.crc, rec.Data); rec.CRC != want {
			// The frame is intact, so reading goes on right after it, with the
			// chain continued from the crc it stores.
			d.crc = rec.CRC
			d.endOffset = off
			return nil, newError(d.cur.Path, off, d.tornOr(ErrCRCMismatch, buf[:length], off+frameHeaderSize),
				fmt.Errorf("%s record stores crc %#08x, chain gives %#08x", rec.Type, rec.CRC, want))
		}
	}
	d.crc, d.chainKnown = rec.CRC, true
	it := &Item{Segment: d.cur, Offset: off, FrameSize: frameSize, Record: rec}
	switch {
	case d.opts.SkipEntries && rec.Type == RecordEntry:
	case d.opts.SkipEntries:
		it.Data = bytes.Clone(rec.Data) // the payload may keep parts of it
		it.Payload, err = DecodePayload(rec.Type, it.Data)
	default:
		it.Payload, err = DecodePayload(rec.Type, rec.Data)
	}
	if err != nil {
		// The crc vouches for the bytes, so the frame boundaries are right.
		d.endOffset = off
		return nil, newError(d.cur.Path, off, ErrBadRecord, fmt.Errorf("%s record: %w", rec.Type, err))
	}
	d.records++
	if err := d.checkSegmentStart(it); err != nil {
		d.pending = it
		return nil, err
	}
	return it, nil
}

// tornOr returns ErrTornFrame instead of reason for a bad record, at file
// offset recOff, that looks like an unfinished write: no frame follows it,
// and its bytes end in zeros (the preallocated space a write never reached):
// its last 8 bytes, or all its bytes from the last sector boundary inside it
// (a disk writes a 512-byte sector whole or not at all, so a write cut by a
// power loss ends at one).
func (d *Decoder) tornOr(reason error, rec []byte, recOff int64) error {
	next, err := d.br.Peek(frameHeaderSize)
	if (err != nil && !errors.Is(err, io.EOF)) || !allZero(next) {
		return reason
	}
	if len(rec) >= frameHeaderSize && allZero(rec[len(rec)-frameHeaderSize:]) {
		return ErrTornFrame
	}
	end := recOff + int64(len(rec))
	if boundary := (end - 1) / sectorSize * sectorSize; len(rec) > 0 && boundary > recOff && allZero(rec[boundary-recOff:]) {
		return ErrTornFrame
	}
	return reason
}

// checkSegmentStart checks that a segment opens with a crc record and a
// metadata record.
func (d *Decoder) checkSegmentStart(it *Item) error {
	if d.damaged {
		return nil // the start was reported broken already
	}
	var want RecordType
	switch d.records {
	case 1:
		want = RecordCRC
	case 2:
		want = RecordMetadata
	default:
		return nil
	}
	if it.Type != want {
		return newError(d.cur.Path, it.Offset, ErrBadSegmentStart,
			fmt.Errorf("record %d is %s, want %s", d.records, it.Type, want))
	}
	return nil
}

// endOfFrames handles the zero length word at off that ends a segment's frames.
func (d *Decoder) endOfFrames(off int64) error {
	d.off = off
	if !d.opts.VerifyTail {
		return io.EOF
	}
	pos := off + frameHeaderSize
	var chunk [64 << 10]byte
	for {
		n, err := d.br.Read(chunk[:])
		for i, c := range chunk[:n] {
			if c != 0 {
				d.endOffset = off
				return d.fail(ErrDataAfterTail, off, (pos+int64(i))&^7,
					fmt.Errorf("non-zero byte at offset %d", pos+int64(i)))
			}
		}
		pos += int64(n)
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		if err != nil {
			return d.fail(ErrIO, off, d.size, err)
		}
	}
}
