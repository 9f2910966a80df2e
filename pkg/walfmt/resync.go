package walfmt

import (
	"encoding/binary"
	"errors"
	"io"
)

// After damage, a reader can only trust frames again where it finds a frame
// whose record decodes and whose successor continues the CRC chain from it (or
// which is the last frame of the file). That pair is strong evidence of real
// frames rather than garbage that happens to look like a length word.

const scanChunkSize = 1 << 20

// frameAt decodes and fully checks the frame at off: header, bounds, record and
// payload. It returns the record and the offset after the frame.
func frameAt(r io.ReaderAt, off, size int64) (Record, int64, bool) {
	if off+frameHeaderSize > size {
		return Record{}, 0, false
	}
	var hdr [frameHeaderSize]byte
	if _, err := r.ReadAt(hdr[:], off); err != nil {
		return Record{}, 0, false
	}
	return frameWithWordAt(r, binary.LittleEndian.Uint64(hdr[:]), off, size)
}

func frameWithWordAt(r io.ReaderAt, word uint64, off, size int64) (Record, int64, bool) {
	if word == 0 {
		return Record{}, 0, false
	}
	length, pad, err := DecodeFrameHeader(word)
	if err != nil {
		return Record{}, 0, false
	}
	end := off + frameHeaderSize + length + int64(pad)
	if end > size || end < off || length < 4 {
		return Record{}, 0, false
	}
	// Writers put the type first and the crc second: check those three bytes
	// before reading a frame whose length may be garbage.
	var head [3]byte
	if _, err := r.ReadAt(head[:], off+frameHeaderSize); err != nil {
		return Record{}, 0, false
	}
	if head[0] != 0x08 || !RecordType(head[1]).Valid() || head[2] != 0x10 {
		return Record{}, 0, false
	}
	buf := make([]byte, length)
	if _, err := r.ReadAt(buf, off+frameHeaderSize); err != nil {
		return Record{}, 0, false
	}
	rec, err := UnmarshalRecord(buf)
	if err != nil {
		return Record{}, 0, false
	}
	if _, err := DecodePayload(rec.Type, rec.Data); err != nil {
		return Record{}, 0, false
	}
	return rec, end, true
}

// endOfFramesAt reports whether off is where a file's frames end: the end of
// the file or a zero length word.
func endOfFramesAt(r io.ReaderAt, off, size int64) bool {
	if off+frameHeaderSize > size {
		rest := make([]byte, size-off)
		_, err := r.ReadAt(rest, off)
		return err == nil && allZero(rest)
	}
	var hdr [frameHeaderSize]byte
	_, err := r.ReadAt(hdr[:], off)
	return err == nil && binary.LittleEndian.Uint64(hdr[:]) == 0
}

// trustworthyFrameAt reports whether a real frame starts at off (see above).
func trustworthyFrameAt(r io.ReaderAt, word uint64, off, size int64) bool {
	first, next, ok := frameWithWordAt(r, word, off, size)
	if !ok {
		return false
	}
	if endOfFramesAt(r, next, size) {
		return true
	}
	second, _, ok := frameAt(r, next, size)
	return ok && second.CRC == Chain(first.CRC, second.Data)
}

// findFrameStart returns the first 8-aligned offset at or after from where a
// trustworthy frame starts, or -1 when there is none before size.
func findFrameStart(r io.ReaderAt, from, size int64) (int64, error) {
	off := (from + 7) &^ 7
	buf := make([]byte, scanChunkSize)
	for off+frameHeaderSize <= size {
		n := min(int64(len(buf)), size-off) &^ 7
		chunk := buf[:n]
		if _, err := r.ReadAt(chunk, off); err != nil && !errors.Is(err, io.EOF) {
			return -1, err
		}
		for i := 0; i < len(chunk); i += frameHeaderSize {
			word := binary.LittleEndian.Uint64(chunk[i:])
			if word == 0 {
				continue
			}
			if trustworthyFrameAt(r, word, off+int64(i), size) {
				return off + int64(i), nil
			}
		}
		off += n
	}
	return -1, nil
}
