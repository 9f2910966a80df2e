package walfmt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func TestFrameHeader(t *testing.T) {
	cases := []struct {
		n    int
		word uint64
		pad  int
	}{
		{4, 0x8400000000000004, 4},  // the fixture's first frame (crc record)
		{30, 0x820000000000001e, 2}, // its metadata record
		{16, 0x10, 0},               // no padding: top bit clear
		{39, 0x8100000000000027, 1}, // one pad byte
		{41, 0x8700000000000029, 7}, // seven
		{1 << 20, 1 << 20, 0},       // large, aligned
	}
	for _, c := range cases {
		word, pad := EncodeFrameHeader(c.n)
		if word != c.word || pad != c.pad {
			t.Errorf("EncodeFrameHeader(%d) = %#x, %d; want %#x, %d", c.n, word, pad, c.word, c.pad)
		}
		n, pad, err := DecodeFrameHeader(c.word)
		if err != nil || n != int64(c.n) || pad != c.pad {
			t.Errorf("DecodeFrameHeader(%#x) = %d, %d, %v", c.word, n, pad, err)
		}
	}
	for _, bad := range []uint64{
		0x8000000000000008, // pad flag, pad 0
		0x0400000000000004, // pad size without flag
		0x8300000000000004, // pad does not align
		0x0000000000000005, // unaligned, no pad
		0x8800000000000008, // reserved bit
		0x8000000000000000, // zero length
	} {
		if _, _, err := DecodeFrameHeader(bad); err == nil {
			t.Errorf("DecodeFrameHeader(%#x) accepted", bad)
		}
	}
}

func TestSplitFrame(t *testing.T) {
	rec := []byte("hello")
	frame := AppendFrame(nil, rec)
	if len(frame) != 16 || !bytes.Equal(frame[13:], []byte{0, 0, 0}) {
		t.Fatalf("frame %x", frame)
	}
	got, size, err := SplitFrame(append(frame, 0xff))
	if err != nil || size != 16 || !bytes.Equal(got, rec) {
		t.Fatalf("SplitFrame = %q, %d, %v", got, size, err)
	}
	if _, _, err := SplitFrame(frame[:12]); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short frame: %v", err)
	}
	if _, _, err := SplitFrame(make([]byte, 16)); err != io.EOF {
		t.Errorf("zero word: %v", err)
	}
	if _, _, err := SplitFrame(nil); err != io.EOF {
		t.Errorf("empty: %v", err)
	}
	if _, _, err := SplitFrame([]byte{1, 2}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("partial word: %v", err)
	}
	bad := binary.LittleEndian.AppendUint64(nil, 0x0400000000000004)
	if _, _, err := SplitFrame(append(bad, 1, 2, 3, 4, 0, 0, 0, 0)); !errors.Is(err, ErrBadFrame) {
		t.Errorf("bad word: %v", err)
	}
}

// FuzzDecodeFrame: any bytes give a frame or an error, never a panic; a frame
// that decodes re-encodes to the same bytes when its padding is zero.
func FuzzDecodeFrame(f *testing.F) {
	f.Add(AppendFrame(nil, []byte("abc")))
	f.Add(AppendFrame(nil, make([]byte, 8)))
	f.Add([]byte{0x04, 0, 0, 0, 0, 0, 0, 0x84, 8, 4, 16, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, size, err := SplitFrame(b)
		if err != nil {
			if rec != nil || size != 0 {
				t.Fatalf("error %v with a result", err)
			}
			return
		}
		if size%8 != 0 || size > len(b) || len(rec) == 0 {
			t.Fatalf("frame size %d, record %d, input %d", size, len(rec), len(b))
		}
		if allZero(b[frameHeaderSize+len(rec) : size]) {
			if again := AppendFrame(nil, rec); !bytes.Equal(again, b[:size]) {
				t.Fatalf("re-encoded %x, read %x", again, b[:size])
			}
		}
	})
}
