package walfmt

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

func TestRepairTornTail(t *testing.T) {
	dir, items := writeWAL(t, 20, 1<<16)
	last := items[len(items)-1]
	path := last.Segment.Path
	cutAt := last.Offset + last.FrameSize - 5
	if err := os.Truncate(path, cutAt); err != nil {
		t.Fatal(err)
	}
	before := mustRead(t, path)

	res, err := Repair(dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Offset != last.Offset || res.CutBytes != cutAt-last.Offset || res.BrokenPath != path+".broken" || !errors.Is(res.Damage, ErrTornFrame) {
		t.Errorf("result %+v", res)
	}
	if broken := mustRead(t, res.BrokenPath); !bytes.Equal(broken, before[last.Offset:]) {
		t.Errorf(".broken holds %d bytes, want the %d cut", len(broken), len(before)-int(last.Offset))
	}
	if st, _ := os.Stat(path); st.Size() != last.Offset {
		t.Errorf("truncated to %d, want %d", st.Size(), last.Offset)
	}
	// Now the WAL reads, and a writer can go on.
	w, rr, err := Open(dir, Snapshot{}, Options{SegmentSize: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rr.Entries); n != 20 {
		t.Errorf("%d entries after repair (the lost last record is a hard state)", n)
	}
	if err := w.Save(hardState(1, 1, 20), []*raftpb.Entry{entry(1, 21, "after repair")}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rr, err = ReadAll(dir, Snapshot{})
	if err != nil || len(rr.Entries) != 21 {
		t.Fatalf("after append: %v", err)
	}
	// A healthy WAL needs nothing.
	if res, err := Repair(dir); res != nil || err != nil {
		t.Errorf("repair of a healthy WAL: %+v, %v", res, err)
	}
}

func TestRepairGarbageTail(t *testing.T) {
	dir, items := writeWAL(t, 20, 1<<16)
	last := items[len(items)-1]
	end := last.Offset + last.FrameSize
	b := mustRead(t, last.Segment.Path)
	copy(b[end:], "\x13\x00\x00\x00\x00\x00\x00\x85half-written garbage")
	mustWrite(t, last.Segment.Path, b)
	res, err := Repair(dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Offset != end {
		t.Errorf("cut at %d, want %d", res.Offset, end)
	}
	if _, err := ReadAll(dir, Snapshot{}); err != nil {
		t.Error(err)
	}
}

func TestRepairDataAfterZeroWord(t *testing.T) {
	dir, items := writeWAL(t, 20, 1<<16)
	last := items[len(items)-1]
	end := last.Offset + last.FrameSize
	b := mustRead(t, last.Segment.Path)
	b[end+100] = 0x5a
	mustWrite(t, last.Segment.Path, b)
	res, err := Repair(dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Offset != end || !errors.Is(res.Damage, ErrDataAfterTail) {
		t.Errorf("result %+v", res)
	}
}

// writeBatchWAL writes one entry, then a batch of 38 in one Save, and
// returns the directory and the segment path.
func writeBatchWAL(t *testing.T) (string, string) {
	t.Helper()
	dir, w := newWAL(t, Options{SegmentSize: 1 << 16, Sync: SyncNever})
	if err := w.Save(hardState(1, 1, 0), []*raftpb.Entry{entry(1, 1, "first")}); err != nil {
		t.Fatal(err)
	}
	var batch []*raftpb.Entry
	for i := uint64(2); i < 40; i++ {
		batch = append(batch, entry(1, i, "a batch entry of some forty bytes....."))
	}
	if err := w.Save(hardState(1, 1, 1), batch); err != nil {
		t.Fatal(err)
	}
	path := w.Segments()[0].Path
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

// The end of a batch never reached the preallocated file: the frame at the
// boundary is half zeros. That is a torn tail.
func TestRepairTornBatchTail(t *testing.T) {
	dir, path := writeBatchWAL(t)
	items, _ := decodeDir(t, dir, DecoderOptions{})
	var torn *Item
	for _, it := range items {
		if it.Offset <= 1024 && it.Offset+it.FrameSize > 1024 {
			torn = it
		}
	}
	b := mustRead(t, path)
	clear(b[torn.Offset+12 : 4096])
	mustWrite(t, path, b)
	_, errs := decodeDir(t, dir, DecoderOptions{})
	if len(errs) != 1 || !errors.Is(errs[0], ErrTornFrame) {
		t.Fatalf("decoder errors %v, want one torn frame", errs)
	}
	res, err := Repair(dir)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := ReadAll(dir, Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Offset != torn.Offset || len(rr.Entries) >= 39 || len(rr.Entries) < 2 {
		t.Errorf("cut at %d, %d entries left", res.Offset, len(rr.Entries))
	}
}

// Zeros inside the batch with good records after them: possibly a write the
// disk finished out of order, possibly a corrupted record. Refused.
func TestRepairRefusesZerosFollowedByGoodRecords(t *testing.T) {
	dir, path := writeBatchWAL(t)
	b := mustRead(t, path)
	clear(b[1024:1536])
	mustWrite(t, path, b)
	if _, err := Repair(dir); !errors.Is(err, ErrNotRepairable) {
		t.Fatalf("Repair: %v", err)
	}
}

func TestRepairRefusesMiddleDamage(t *testing.T) {
	dir, items := writeWAL(t, 40, 1<<16)
	victim := items[30]
	flipByte(t, victim.Segment.Path, victim.Offset+frameHeaderSize+int64(RecordSize(victim.Record))-1)
	before := mustRead(t, victim.Segment.Path)
	res, err := Repair(dir)
	if res != nil || !errors.Is(err, ErrNotRepairable) || !errors.Is(err, ErrCRCMismatch) {
		t.Fatalf("Repair: %+v, %v", res, err)
	}
	if !bytes.Equal(before, mustRead(t, victim.Segment.Path)) {
		t.Error("refused repair changed the file")
	}
	if _, err := os.Stat(victim.Segment.Path + BrokenExt); !os.IsNotExist(err) {
		t.Errorf("refused repair wrote a .broken file: %v", err)
	}
	t.Log(err)
}

func TestRepairRefusesBrokenLengthWordInMiddle(t *testing.T) {
	dir, items := writeWAL(t, 40, 1<<16)
	victim := items[30]
	flipByte(t, victim.Segment.Path, victim.Offset+6) // now reads as a frame past the end
	if _, err := Repair(dir); !errors.Is(err, ErrNotRepairable) || !errors.Is(err, ErrTornFrame) {
		t.Fatalf("Repair: %v", err)
	}
}

func TestRepairRefusesDamageInEarlierSegment(t *testing.T) {
	dir, items := writeWAL(t, 150, 2048)
	var victim *Item
	for _, it := range items {
		if it.Segment.Seq == 1 && it.Type == RecordEntry {
			victim = it
			break
		}
	}
	segs, _ := ListSegments(dir)
	last := segs[len(segs)-1]
	if err := os.Truncate(last.Path, 100); err != nil { // a torn tail too
		t.Fatal(err)
	}
	if err := os.Truncate(victim.Segment.Path, victim.Offset+10); err != nil {
		t.Fatal(err)
	}
	_, err := Repair(dir)
	if werr := asWALError(t, err); !errors.Is(err, ErrNotRepairable) || werr.File != victim.Segment.Path {
		t.Fatalf("Repair: %v", err)
	}
}

func TestRepairRefusesMissingSegment(t *testing.T) {
	dir, _ := writeWAL(t, 150, 2048)
	segs, _ := ListSegments(dir)
	if err := os.Remove(segs[1].Path); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(dir); !errors.Is(err, ErrNotRepairable) || !errors.Is(err, ErrMissingSegment) {
		t.Fatalf("Repair: %v", err)
	}
}

func TestRepairRefusesDamagedHeader(t *testing.T) {
	dir, items := writeWAL(t, 3, 1<<16)
	if err := os.Truncate(items[0].Segment.Path, 20); err != nil { // inside the metadata record
		t.Fatal(err)
	}
	if _, err := Repair(dir); !errors.Is(err, ErrNotRepairable) {
		t.Fatalf("Repair: %v", err)
	}
}

// TestRepairRefusesLockedWAL: while a writer holds the WAL, healthy or
// not, Repair refuses, having read and changed nothing.
func TestRepairRefusesLockedWAL(t *testing.T) {
	dir, _ := writeWAL(t, 5, 1<<16)
	w, _, err := Open(dir, Snapshot{}, Options{SegmentSize: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := Repair(dir); res != nil || !errors.Is(err, ErrLocked) {
		t.Errorf("repair of a WAL a writer holds: %+v, %v", res, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if res, err := Repair(dir); res != nil || err != nil {
		t.Errorf("repair once the writer is closed: %+v, %v", res, err)
	}
}
