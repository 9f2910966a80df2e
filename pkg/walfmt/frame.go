package walfmt

import (
	"encoding/binary"
	"fmt"
	"io"
)

// A frame is a little-endian uint64 length word, the record bytes, and zero
// padding up to a multiple of 8 bytes. When there is padding, the top bit of the
// length word is set and bits 56-58 hold the pad size; the low 56 bits are the
// record length. A zero length word ends the frames of a file.

const (
	frameHeaderSize = 8
	// sectorSize is the unit a disk writes whole or not at all.
	sectorSize      = 512
	frameLengthMask = 1<<56 - 1
)

// padSize returns the zero bytes that follow a record of n bytes.
func padSize(n int) int { return (8 - n%8) % 8 }

// EncodeFrameHeader returns the length word for a record of n bytes and the
// number of pad bytes that follow the record.
func EncodeFrameHeader(n int) (word uint64, pad int) {
	pad = padSize(n)
	word = uint64(n)
	if pad != 0 {
		word |= uint64(0x80|pad) << 56
	}
	return word, pad
}

// DecodeFrameHeader splits a non-zero length word into record length and pad
// size. It rejects words no writer produces: a zero record length, stray bits
// 59-62, pad bits without the pad flag, or a pad that does not align the frame.
func DecodeFrameHeader(word uint64) (length int64, pad int, err error) {
	length = int64(word & frameLengthMask)
	flags := word >> 56
	if flags&0x78 != 0 {
		return 0, 0, fmt.Errorf("length word %#016x: reserved bits set", word)
	}
	if flags&0x80 != 0 {
		pad = int(flags & 0x07)
		if pad == 0 {
			return 0, 0, fmt.Errorf("length word %#016x: pad flag without pad size", word)
		}
	} else if flags != 0 {
		return 0, 0, fmt.Errorf("length word %#016x: pad size without pad flag", word)
	}
	if length == 0 {
		return 0, 0, fmt.Errorf("length word %#016x: zero record length", word)
	}
	if (length+int64(pad))%8 != 0 {
		return 0, 0, fmt.Errorf("length word %#016x: pad %d does not align record of %d bytes", word, pad, length)
	}
	return length, pad, nil
}

// AppendFrame appends the frame holding rec (length word, rec, zero padding) to dst.
func AppendFrame(dst, rec []byte) []byte {
	word, pad := EncodeFrameHeader(len(rec))
	dst = binary.LittleEndian.AppendUint64(dst, word)
	dst = append(dst, rec...)
	var zeros [8]byte
	return append(dst, zeros[:pad]...)
}

// SplitFrame reads the frame at the start of b. It returns the record bytes (a
// sub-slice of b) and the frame size including header and padding. A zero
// length word gives io.EOF (the end of the frames); a frame longer than b gives
// an error wrapping io.ErrUnexpectedEOF; an impossible length word gives an
// error wrapping ErrBadFrame.
func SplitFrame(b []byte) (rec []byte, size int, err error) {
	if len(b) < frameHeaderSize {
		if allZero(b) {
			return nil, 0, io.EOF
		}
		return nil, 0, fmt.Errorf("length word of %d bytes: %w", len(b), io.ErrUnexpectedEOF)
	}
	word := binary.LittleEndian.Uint64(b)
	if word == 0 {
		return nil, 0, io.EOF
	}
	length, pad, err := DecodeFrameHeader(word)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrBadFrame, err)
	}
	avail := int64(len(b) - frameHeaderSize)
	if length+int64(pad) > avail {
		return nil, 0, fmt.Errorf("frame of %d bytes with %d available: %w", length+int64(pad), avail, io.ErrUnexpectedEOF)
	}
	end := frameHeaderSize + int(length)
	return b[frameHeaderSize:end], end + pad, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
