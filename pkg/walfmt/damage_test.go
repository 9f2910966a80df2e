package walfmt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// writeWAL writes n entries, each saved with a hard state, and returns the
// directory and the records as read back.
func writeWAL(t testing.TB, n int, segSize int64) (string, []*Item) {
	t.Helper()
	dir, w := newWAL(t, Options{SegmentSize: segSize, Sync: SyncNever})
	for i := uint64(1); i <= uint64(n); i++ {
		if err := w.Save(hardState(1, 1, i-1), []*raftpb.Entry{entry(1, i, fmt.Sprintf("entry number %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	items, errs := decodeDir(t, dir, DecoderOptions{VerifyTail: true})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	return dir, items
}

// flipByte inverts one byte of a file.
func flipByte(t testing.TB, path string, off int64) {
	t.Helper()
	b := mustRead(t, path)
	b[off] ^= 0xff
	mustWrite(t, path, b)
}

func TestDamageTornLastFrame(t *testing.T) {
	dir, items := writeWAL(t, 20, 1<<16)
	last := items[len(items)-1]
	path := last.Segment.Path
	// The crash left the length word and part of the record; the rest of the
	// file is gone (no preallocation).
	if err := os.Truncate(path, last.Offset+last.FrameSize-5); err != nil {
		t.Fatal(err)
	}
	got, errs := decodeDir(t, dir, DecoderOptions{})
	if len(errs) != 1 || len(got) != len(items)-1 {
		t.Fatalf("%d records, errors %v", len(got), errs)
	}
	werr := asWALError(t, errs[0])
	if !errors.Is(werr, ErrTornFrame) || werr.Offset != last.Offset || werr.File != last.Segment.Path {
		t.Errorf("error %v, want torn frame at %d", werr, last.Offset)
	}
	_, err := ReadAll(dir, Snapshot{})
	if !errors.Is(err, ErrTornFrame) {
		t.Errorf("ReadAll: %v", err)
	}
}

func TestDamageTornLastFrameInPreallocatedFile(t *testing.T) {
	dir, items := writeWAL(t, 20, 1<<16)
	last := items[len(items)-1]
	// Length word written, the record's second half still zeros.
	b := mustRead(t, last.Segment.Path)
	clear(b[last.Offset+12 : last.Offset+last.FrameSize])
	mustWrite(t, last.Segment.Path, b)
	got, errs := decodeDir(t, dir, DecoderOptions{})
	if len(errs) != 1 || len(got) != len(items)-1 {
		t.Fatalf("%d records, errors %v", len(got), errs)
	}
	if werr := asWALError(t, errs[0]); werr.Offset != last.Offset || !errors.Is(werr, ErrTornFrame) {
		t.Errorf("error %v", werr)
	}
}

func TestDamageFlippedDataByteInMiddle(t *testing.T) {
	dir, items := writeWAL(t, 40, 1<<16)
	victim := items[30] // an entry or hard state well inside
	// The last byte of the record's data.
	flipByte(t, victim.Segment.Path, victim.Offset+frameHeaderSize+int64(RecordSize(victim.Record))-1)
	got, errs := decodeDir(t, dir, DecoderOptions{VerifyTail: true})
	if len(errs) != 1 {
		t.Fatalf("errors %v", errs)
	}
	werr := asWALError(t, errs[0])
	if !errors.Is(werr, ErrCRCMismatch) || werr.Offset != victim.Offset {
		t.Errorf("error %v, want crc mismatch at %d", werr, victim.Offset)
	}
	// The decoder goes on after the bad record and checks the chain from there.
	if len(got) != len(items)-1 || got[30].Offset != items[31].Offset {
		t.Errorf("%d records after the damage", len(got))
	}
	if _, err := ReadAll(dir, Snapshot{}); !errors.Is(err, ErrCRCMismatch) {
		t.Errorf("ReadAll: %v", err)
	}
}

func TestDamageFlippedLengthWordInMiddle(t *testing.T) {
	for _, c := range []struct {
		byteInWord int64
		reason     error
	}{
		{7, ErrBadFrame},  // the flags byte: reserved bits set
		{6, ErrTornFrame}, // a length far past the end of the file
		{0, ErrBadFrame},  // a length the padding does not align
	} {
		t.Run(c.reason.Error(), func(t *testing.T) {
			dir, items := writeWAL(t, 40, 1<<16)
			victim := items[30]
			flipByte(t, victim.Segment.Path, victim.Offset+c.byteInWord)
			got, errs := decodeDir(t, dir, DecoderOptions{VerifyTail: true})
			if len(errs) != 1 {
				t.Fatalf("errors %v", errs)
			}
			if werr := asWALError(t, errs[0]); werr.Offset != victim.Offset || !errors.Is(werr, c.reason) {
				t.Errorf("error %v, want %v at %d", werr, c.reason, victim.Offset)
			}
			// Resynchronised at the next frame: only the damaged record is lost.
			if len(got) != len(items)-1 || got[30].Offset != items[31].Offset {
				t.Errorf("%d records, want %d", len(got), len(items)-1)
			}
		})
	}
}

func TestDamageMissingMiddleSegment(t *testing.T) {
	dir, items := writeWAL(t, 150, 2048)
	segs, err := ListSegments(dir)
	if err != nil || len(segs) < 4 {
		t.Fatalf("%d segments, %v", len(segs), err)
	}
	if err := os.Remove(segs[1].Path); err != nil {
		t.Fatal(err)
	}
	got, errs := decodeDir(t, dir, DecoderOptions{})
	if len(errs) != 1 {
		t.Fatalf("errors %v", errs)
	}
	werr := asWALError(t, errs[0])
	if !errors.Is(werr, ErrMissingSegment) || werr.File != segs[2].Path || werr.Offset != -1 {
		t.Errorf("error %v", werr)
	}
	lost := 0
	for _, it := range items {
		if it.Segment.Seq == 1 {
			lost++
		}
	}
	if len(got) != len(items)-lost {
		t.Errorf("%d records, want %d", len(got), len(items)-lost)
	}
	if _, err := ReadAll(dir, Snapshot{}); !errors.Is(err, ErrMissingSegment) {
		t.Errorf("ReadAll: %v", err)
	}
}

func TestZeroTail(t *testing.T) {
	dir, items := writeWAL(t, 5, 1<<16)
	st, err := os.Stat(items[0].Segment.Path)
	if err != nil || st.Size() != 1<<16 {
		t.Fatalf("preallocated size %v, %v", st.Size(), err)
	}
	if got, errs := decodeDir(t, dir, DecoderOptions{VerifyTail: true}); len(errs) != 0 || len(got) != len(items) {
		t.Errorf("%d records, errors %v", len(got), errs)
	}
	// A tail shorter than a length word, all zeros, is fine too.
	last := items[len(items)-1]
	end := last.Offset + last.FrameSize
	if err := os.Truncate(last.Segment.Path, end+4); err != nil {
		t.Fatal(err)
	}
	if got, errs := decodeDir(t, dir, DecoderOptions{VerifyTail: true}); len(errs) != 0 || len(got) != len(items) {
		t.Errorf("short zero tail: %d records, errors %v", len(got), errs)
	}
}

func TestDataAfterZeroTail(t *testing.T) {
	dir, items := writeWAL(t, 5, 1<<16)
	last := items[len(items)-1]
	end := last.Offset + last.FrameSize
	b := mustRead(t, last.Segment.Path)
	b[end+1000] = 1
	mustWrite(t, last.Segment.Path, b)
	// Like etcd, a plain reader stops at the zero word.
	if got, errs := decodeDir(t, dir, DecoderOptions{}); len(errs) != 0 || len(got) != len(items) {
		t.Errorf("%d records, errors %v", len(got), errs)
	}
	got, errs := decodeDir(t, dir, DecoderOptions{VerifyTail: true})
	if len(errs) != 1 || len(got) != len(items) {
		t.Fatalf("%d records, errors %v", len(got), errs)
	}
	if werr := asWALError(t, errs[0]); !errors.Is(werr, ErrDataAfterTail) || werr.Offset != end {
		t.Errorf("error %v, want data after tail at %d", werr, end)
	}
}

func TestBadFileName(t *testing.T) {
	dir, items := writeWAL(t, 3, 1<<16)
	mustWrite(t, filepath.Join(dir, "0000000000000001.wal"), nil)
	mustWrite(t, filepath.Join(dir, "notes.txt"), nil) // not a .wal: ignored
	segs, err := ListSegments(dir)
	if len(segs) != 1 || !errors.Is(err, ErrBadFileName) {
		t.Errorf("ListSegments: %d segments, %v", len(segs), err)
	}
	got, errs := decodeDir(t, dir, DecoderOptions{})
	if len(errs) != 1 || len(got) != len(items) {
		t.Fatalf("%d records, errors %v", len(got), errs)
	}
	if werr := asWALError(t, errs[0]); !errors.Is(werr, ErrBadFileName) || werr.File != filepath.Join(dir, "0000000000000001.wal") {
		t.Errorf("error %v", werr)
	}
	if _, err := ReadAll(dir, Snapshot{}); !errors.Is(err, ErrBadFileName) {
		t.Errorf("ReadAll: %v", err)
	}
	for _, name := range []string{"x.wal", "0000000000000000-000000000000000g.wal", "000000000000000-0000000000000000.wal", "0000000000000000-0000000000000000.snap"} {
		if _, _, err := ParseSegmentName(name); err == nil {
			t.Errorf("ParseSegmentName(%q) accepted", name)
		}
	}
}

// craftSegment builds a segment file from records, chaining crcs from prev.
func craftSegment(prev uint32, recs ...Record) ([]byte, uint32) {
	var b []byte
	for _, r := range recs {
		prev = Chain(prev, r.Data)
		r.CRC = prev
		b = AppendRecordFrame(b, r)
	}
	return b, prev
}

func TestBadSegmentStart(t *testing.T) {
	dir := t.TempDir()
	md := mustMarshal(t, testMetadata())
	snap, _ := MarshalSnapshot(Snapshot{})
	seg, _ := craftSegment(0, Record{Type: RecordMetadata, Data: md}, Record{Type: RecordSnapshot, Data: snap})
	mustWrite(t, filepath.Join(dir, SegmentName(0, 0)), seg)
	got, errs := decodeDir(t, dir, DecoderOptions{})
	if len(errs) != 1 || len(got) != 2 {
		t.Fatalf("%d records, errors %v", len(got), errs)
	}
	if werr := asWALError(t, errs[0]); !errors.Is(werr, ErrBadSegmentStart) || werr.Offset != 0 {
		t.Errorf("error %v", werr)
	}
	// A segment that is nothing but zeros has no header either.
	mustWrite(t, filepath.Join(dir, SegmentName(0, 0)), make([]byte, 4096))
	if _, errs := decodeDir(t, dir, DecoderOptions{}); len(errs) != 1 || !errors.Is(errs[0], ErrBadSegmentStart) {
		t.Errorf("empty segment: %v", errs)
	}
}

func TestReadAllRejectsConflictsAndGaps(t *testing.T) {
	md := mustMarshal(t, testMetadata())
	snap, _ := MarshalSnapshot(Snapshot{})
	crcRec := Record{Type: RecordCRC}
	t.Run("metadata conflict", func(t *testing.T) {
		dir := t.TempDir()
		seg0, crc := craftSegment(0, crcRec, Record{Type: RecordMetadata, Data: md}, Record{Type: RecordSnapshot, Data: snap})
		other := mustMarshal(t, hardState(9, 9, 9)) // any other bytes that decode
		seg1, _ := craftSegment(crc, crcRec, Record{Type: RecordMetadata, Data: other})
		mustWrite(t, filepath.Join(dir, SegmentName(0, 0)), seg0)
		mustWrite(t, filepath.Join(dir, SegmentName(1, 1)), seg1)
		if _, err := ReadAll(dir, Snapshot{}); !errors.Is(err, ErrMetadataConflict) {
			t.Errorf("ReadAll: %v", err)
		}
	})
	t.Run("entry gap", func(t *testing.T) {
		dir := t.TempDir()
		seg0, _ := craftSegment(0, crcRec, Record{Type: RecordMetadata, Data: md}, Record{Type: RecordSnapshot, Data: snap},
			Record{Type: RecordEntry, Data: mustMarshal(t, entry(1, 1, ""))},
			Record{Type: RecordEntry, Data: mustMarshal(t, entry(1, 3, ""))})
		mustWrite(t, filepath.Join(dir, SegmentName(0, 0)), seg0)
		if _, err := ReadAll(dir, Snapshot{}); !errors.Is(err, ErrEntryGap) {
			t.Errorf("ReadAll: %v", err)
		}
	})
	t.Run("crc record breaks the chain across segments", func(t *testing.T) {
		dir := t.TempDir()
		seg0, crc := craftSegment(0, crcRec, Record{Type: RecordMetadata, Data: md}, Record{Type: RecordSnapshot, Data: snap})
		seg1, _ := craftSegment(crc+1, crcRec, Record{Type: RecordMetadata, Data: md})
		mustWrite(t, filepath.Join(dir, SegmentName(0, 0)), seg0)
		mustWrite(t, filepath.Join(dir, SegmentName(1, 1)), seg1)
		_, err := ReadAll(dir, Snapshot{})
		if werr := asWALError(t, err); !errors.Is(err, ErrCRCMismatch) || werr.File != filepath.Join(dir, SegmentName(1, 1)) || werr.Offset != 0 {
			t.Errorf("ReadAll: %v", err)
		}
	})
	t.Run("first segment must start the chain at 0", func(t *testing.T) {
		dir := t.TempDir()
		seg0, _ := craftSegment(5, crcRec, Record{Type: RecordMetadata, Data: md}, Record{Type: RecordSnapshot, Data: snap})
		mustWrite(t, filepath.Join(dir, SegmentName(0, 0)), seg0)
		if _, err := ReadAll(dir, Snapshot{}); !errors.Is(err, ErrCRCMismatch) {
			t.Errorf("ReadAll: %v", err)
		}
	})
}

// FuzzDecodeSegment: a segment file of any bytes is decoded to the end without
// a panic or an endless loop, every error is an *Error, and Repair either
// refuses or leaves a WAL that decodes cleanly.
func FuzzDecodeSegment(f *testing.F) {
	fixture, err := os.ReadFile(fixtureWAL)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture[:600])
	f.Add(fixture[:597])
	f.Add(append(append([]byte{}, fixture[:600]...), 1, 2, 3))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		mustWrite(t, filepath.Join(dir, SegmentName(0, 0)), b)
		_, errs := decodeDir(t, dir, DecoderOptions{VerifyTail: true})
		for _, err := range errs {
			asWALError(t, err)
		}
		if _, err := Repair(dir); err != nil {
			return
		}
		if _, errs := decodeDir(t, dir, DecoderOptions{VerifyTail: true}); len(errs) != 0 {
			t.Fatalf("Repair succeeded but the segment still has damage: %v", errs)
		}
	})
}

// TestSkipEntries: a decoder that skips entries finds the same records,
// checked the same way, as one that decodes them: the same damage, the
// other records' payloads, and no entry decoded.
func TestSkipEntries(t *testing.T) {
	dir, items := writeWAL(t, 400, 1<<12)
	victim := items[30]
	flipByte(t, victim.Segment.Path, victim.Offset+frameHeaderSize+int64(RecordSize(victim.Record))-1)
	want, wantErrs := decodeDir(t, dir, DecoderOptions{})
	got, gotErrs := decodeDir(t, dir, DecoderOptions{SkipEntries: true})
	if len(gotErrs) != 1 || fmt.Sprint(gotErrs) != fmt.Sprint(wantErrs) {
		t.Fatalf("errors %v, want %v", gotErrs, wantErrs)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	entries := 0
	for i, it := range got {
		w := want[i]
		if it.Segment != w.Segment || it.Offset != w.Offset || it.Type != w.Type || it.CRC != w.CRC {
			t.Fatalf("record %d: %v at %d (crc %#x), want %v at %d (crc %#x)", i, it.Type, it.Offset, it.CRC, w.Type, w.Offset, w.CRC)
		}
		if it.Type == RecordEntry {
			entries++
			if it.Entry != nil {
				t.Errorf("record %d: entry decoded", i)
			}
			continue
		}
		if !bytes.Equal(it.Data, w.Data) || (it.HardState == nil) != (w.HardState == nil) ||
			(it.Metadata == nil) != (w.Metadata == nil) || (it.Snapshot == nil) != (w.Snapshot == nil) {
			t.Errorf("record %d (%v): payload %v, want %v", i, it.Type, it.Payload, w.Payload)
		}
	}
	if entries == 0 || segmentsOf(got) < 2 {
		t.Fatalf("%d entries in %d segments: the WAL does not test what it should", entries, segmentsOf(got))
	}
}

func segmentsOf(items []*Item) int {
	seen := map[string]bool{}
	for _, it := range items {
		seen[it.Segment.Path] = true
	}
	return len(seen)
}

// TestDamageTornAtSectorBoundary: a power loss cuts a write at a 512-byte
// sector boundary, the record's bytes from there on left as zeros. When the
// boundary falls in the record's last 8 bytes, only that short zero run
// tells it from a corrupted record; one within a sector, with the same
// zeros, is damage.
func TestDamageTornAtSectorBoundary(t *testing.T) {
	dir, items := writeWAL(t, 400, 1<<20)
	path := items[0].Segment.Path
	orig := mustRead(t, path)
	found := 0
	for i, it := range items {
		if i < 2 || it.Segment.Path != path {
			continue
		}
		recOff := it.Offset + frameHeaderSize
		word := binary.LittleEndian.Uint64(orig[it.Offset:])
		end := recOff + int64(word&frameLengthMask)
		boundary := (end - 1) / sectorSize * sectorSize
		if boundary <= recOff || end-boundary >= frameHeaderSize || allZero(orig[boundary+1:end]) {
			continue
		}
		found++
		for _, tc := range []struct {
			cut  int64
			want error
		}{
			{boundary, ErrTornFrame},       // at the boundary: torn
			{boundary + 1, ErrCRCMismatch}, // inside a sector: damage
		} {
			b := bytes.Clone(orig)
			clear(b[tc.cut:]) // the rest of the write and every later one: as preallocated
			mustWrite(t, path, b)
			got, errs := decodeDir(t, dir, DecoderOptions{})
			if len(errs) != 1 || len(got) != i {
				t.Fatalf("record %d cut at %d: %d records, errors %v", i, tc.cut, len(got), errs)
			}
			if werr := asWALError(t, errs[0]); werr.Offset != it.Offset || !errors.Is(werr, tc.want) {
				t.Errorf("record %d cut at %d (sector boundary %d, record ends at %d): %v, want %v", i, tc.cut, boundary, end, werr, tc.want)
			}
		}
		if found == 3 {
			break
		}
	}
	if found == 0 {
		t.Fatal("no record ends within 8 bytes after a sector boundary: write more or other entries")
	}
}
