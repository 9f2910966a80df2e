package walfmt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func newWAL(t testing.TB, opts Options) (string, *Writer) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "member", "wal")
	w, err := Create(dir, testMetadata(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return dir, w
}

func entriesEqual(t testing.TB, got, want []*raftpb.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range got {
		if !proto.Equal(got[i], want[i]) {
			t.Fatalf("entry %d: %v, want %v", i, got[i], want[i])
		}
	}
}

func TestCreateWritesFirstSegmentLikeEtcd(t *testing.T) {
	dir, w := newWAL(t, Options{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "0000000000000000-0000000000000000.wal")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != SegmentSizeBytes || st.Mode().Perm() != 0o600 {
		t.Errorf("segment size %d mode %v: want preallocated %d, 0600", st.Size(), st.Mode().Perm(), SegmentSizeBytes)
	}
	if _, err := os.Stat(dir + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary dir left behind: %v", err)
	}
	// Same first three records as the fixture, up to the metadata's bytes.
	items, errs := decodeDir(t, dir, DecoderOptions{VerifyTail: true})
	if len(errs) != 0 || len(items) != 3 {
		t.Fatalf("%d records, errors %v", len(items), errs)
	}
	fixture := mustRead(t, fixtureWAL)
	got := mustRead(t, path)
	if string(got[:16]) != string(fixture[:16]) {
		t.Errorf("crc record %x, etcd writes %x", got[:16], fixture[:16])
	}
	if items[1].Type != RecordMetadata || !proto.Equal(items[1].Metadata, testMetadata()) || items[2].Type != RecordSnapshot || *items[2].Snapshot != (Snapshot{}) {
		t.Errorf("records %v %v", items[1].Type, items[2].Type)
	}

	if _, err := Create(dir, testMetadata(), Options{}); !errors.Is(err, os.ErrExist) {
		t.Errorf("Create over an existing WAL: %v", err)
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	dir, w := newWAL(t, Options{})
	var want []*raftpb.Entry
	for i := uint64(1); i <= 50; i++ {
		e := entry(1+i/20, i, fmt.Sprintf("value-%d", i))
		if i%7 == 0 {
			e.Type = raftpb.EntryConfChange.Enum()
		}
		want = append(want, e)
		if err := w.Save(hardState(1+i/20, 1, i-1), []*raftpb.Entry{e}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Save(nil, nil); err != nil { // nothing to do
		t.Fatal(err)
	}
	if err := w.Save(&raftpb.HardState{}, nil); err != nil { // empty state: nothing either
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	items, errs := decodeDir(t, dir, DecoderOptions{VerifyTail: true})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if len(items) != 3+50*2 {
		t.Errorf("%d records, want %d (empty saves must write nothing)", len(items), 3+100)
	}
	res, err := ReadAll(dir, Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	entriesEqual(t, res.Entries, want)
	if !proto.Equal(res.HardState, hardState(3, 1, 49)) || !proto.Equal(res.Metadata, testMetadata()) {
		t.Errorf("hard state %v, metadata %v", res.HardState, res.Metadata)
	}
}

func TestOpenAppendsAndContinuesChain(t *testing.T) {
	dir, w := newWAL(t, Options{})
	if err := w.Save(hardState(1, 1, 0), []*raftpb.Entry{entry(1, 1, "a"), entry(1, 2, "b")}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w, res, err := Open(dir, Snapshot{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Entries) != 2 || w.LastIndex() != 2 {
		t.Fatalf("reopened with %d entries, last index %d", len(res.Entries), w.LastIndex())
	}
	// A second writer cannot take the WAL.
	if _, _, err := Open(dir, Snapshot{}, Options{}); !errors.Is(err, ErrLocked) {
		t.Errorf("second Open: %v", err)
	}
	// Overwrite entry 2 (a new leader's log) and go on.
	if err := w.Save(hardState(2, 1, 1), []*raftpb.Entry{entry(2, 2, "B"), entry(2, 3, "C")}); err != nil {
		t.Fatal(err)
	}
	if err := w.SaveSnapshot(Snapshot{Index: 2, Term: 2, ConfState: &raftpb.ConfState{Voters: []uint64{1}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Save(hardState(2, 1, 2), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Save after Close: %v", err)
	}
	res, err = ReadAll(dir, Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	entriesEqual(t, res.Entries, []*raftpb.Entry{entry(1, 1, "a"), entry(2, 2, "B"), entry(2, 3, "C")})
	res, err = ReadAll(dir, Snapshot{Index: 2, Term: 2})
	if err != nil {
		t.Fatal(err)
	}
	entriesEqual(t, res.Entries, []*raftpb.Entry{entry(2, 3, "C")})
}

func TestOpenZeroesAfterTail(t *testing.T) {
	dir, w := newWAL(t, Options{SegmentSize: 4096})
	if err := w.Save(hardState(1, 1, 1), []*raftpb.Entry{entry(1, 1, "a")}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Garbage after the zero word that ends the frames: ReadAll stops at the
	// word as etcd does, and Open must not leave the garbage to be misread.
	path := filepath.Join(dir, SegmentName(0, 0))
	b := mustRead(t, path)
	copy(b[2048:], "garbage")
	mustWrite(t, path, b)
	w, _, err := Open(dir, Snapshot{}, Options{SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, errs := decodeDir(t, dir, DecoderOptions{VerifyTail: true}); len(errs) != 0 {
		t.Errorf("tail not zeroed: %v", errs)
	}
}

func TestCutSegments(t *testing.T) {
	const segSize = 4096
	dir, w := newWAL(t, Options{SegmentSize: segSize, Sync: SyncNever})
	var want []*raftpb.Entry
	payload := strings.Repeat("x", 300)
	for i := uint64(1); i <= 60; i++ {
		e := entry(1, i, payload)
		want = append(want, e)
		if err := w.Save(hardState(1, 1, i), []*raftpb.Entry{e}); err != nil {
			t.Fatal(err)
		}
	}
	segs := w.Segments()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(segs) < 4 {
		t.Fatalf("only %d segments", len(segs))
	}
	onDisk, err := ListSegments(dir)
	if err != nil || len(onDisk) != len(segs) {
		t.Fatalf("listed %d segments (%v), writer held %d", len(onDisk), err, len(segs))
	}
	items, errs := decodeDir(t, dir, DecoderOptions{VerifyTail: true})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	bySeg := map[uint64][]*Item{}
	for _, it := range items {
		bySeg[it.Segment.Seq] = append(bySeg[it.Segment.Seq], it)
	}
	for i, s := range onDisk {
		if s.Seq != uint64(i) {
			t.Fatalf("segment %d has sequence %d", i, s.Seq)
		}
		recs := bySeg[s.Seq]
		if recs[0].Type != RecordCRC || recs[1].Type != RecordMetadata {
			t.Errorf("%s starts with %v, %v", s.Name(), recs[0].Type, recs[1].Type)
		}
		if i == 0 {
			continue
		}
		// A later segment: crc carrying the previous segment's last crc, the
		// metadata, the last hard state; named after the next entry's index.
		prev := bySeg[s.Seq-1]
		prevLast := prev[len(prev)-1]
		if recs[0].CRC != prevLast.CRC {
			t.Errorf("%s crc record %#x, previous segment ended at %#x", s.Name(), recs[0].CRC, prevLast.CRC)
		}
		if recs[2].Type != RecordState || !proto.Equal(recs[2].HardState, prevLast.HardState) {
			t.Errorf("%s third record %v %v, want the last hard state %v", s.Name(), recs[2].Type, recs[2].HardState, prevLast.HardState)
		}
		lastEntry := prev[len(prev)-2].Entry
		if s.Index != lastEntry.GetIndex()+1 || (len(recs) > 3 && recs[3].Entry.GetIndex() != s.Index) {
			t.Errorf("%s: named for index %d, previous segment ends with entry %d", s.Name(), s.Index, lastEntry.GetIndex())
		}
		// Closed segments are truncated at their data (no preallocated tail).
		st, _ := os.Stat(onDisk[i-1].Path)
		if st.Size() != prevLast.Offset+prevLast.FrameSize {
			t.Errorf("%s: size %d, data ends at %d", onDisk[i-1].Name(), st.Size(), prevLast.Offset+prevLast.FrameSize)
		}
	}
	res, err := ReadAll(dir, Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	entriesEqual(t, res.Entries, want)

	// Reopen after a snapshot inside the third segment: replay starts there.
	w, res, err = Open(dir, Snapshot{}, Options{SegmentSize: segSize})
	if err != nil {
		t.Fatal(err)
	}
	snapIndex := onDisk[2].Index + 1
	if err := w.SaveSnapshot(Snapshot{Index: snapIndex, Term: 1}); err != nil {
		t.Fatal(err)
	}
	removed, err := w.RemoveSegmentsBefore(snapIndex)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 || removed[0] != onDisk[0].Path || removed[1] != onDisk[1].Path {
		t.Errorf("removed %v", removed)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	res, err = ReadAll(dir, Snapshot{Index: snapIndex, Term: 1})
	if err != nil {
		t.Fatal(err)
	}
	entriesEqual(t, res.Entries, want[snapIndex:])
	// The removed segments held the empty snapshot record: starting from
	// scratch is no longer possible.
	if _, err := ReadAll(dir, Snapshot{}); !errors.Is(err, ErrMissingSegment) {
		t.Errorf("ReadAll from the start after purge: %v", err)
	}
}

func TestReleaseLockTo(t *testing.T) {
	_, w := newWAL(t, Options{SegmentSize: 1024, Sync: SyncNever})
	for i := uint64(1); i <= 20; i++ {
		if err := w.Save(hardState(1, 1, i), []*raftpb.Entry{entry(1, i, strings.Repeat("y", 200))}); err != nil {
			t.Fatal(err)
		}
	}
	segs := w.Segments()
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	// Another writer cannot remove a held segment.
	if err := removeUnlocked(segs[0].Path); !errors.Is(err, ErrLocked) {
		t.Errorf("removing a held segment: %v", err)
	}
	if err := w.ReleaseLockTo(segs[1].Index); err != nil {
		t.Fatal(err)
	}
	if got := w.Segments(); len(got) != len(segs)-1 || got[0] != segs[1] {
		t.Errorf("after release holds %v", got)
	}
	if err := removeUnlocked(segs[0].Path); err != nil {
		t.Errorf("removing a released segment: %v", err)
	}
	// The tail is never released.
	if err := w.ReleaseLockTo(1 << 40); err != nil {
		t.Fatal(err)
	}
	if got := w.Segments(); len(got) != 1 || got[0] != segs[len(segs)-1] {
		t.Errorf("after releasing all holds %v", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRemovesStaleTempSegment(t *testing.T) {
	dir, w := newWAL(t, Options{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, SegmentName(1, 1)+tmpExt)
	mustWrite(t, stale, []byte("half a cut"))
	w, _, err := Open(dir, Snapshot{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale %s: %v", stale, err)
	}
}

func TestEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadAll(dir, Snapshot{}); !errors.Is(err, ErrNoWAL) {
		t.Errorf("ReadAll: %v", err)
	}
	if _, err := OpenDecoder(dir, DecoderOptions{}); !errors.Is(err, ErrNoWAL) {
		t.Errorf("OpenDecoder: %v", err)
	}
	if _, _, err := Open(dir, Snapshot{}, Options{}); !errors.Is(err, ErrNoWAL) {
		t.Errorf("Open: %v", err)
	}
	if _, err := Repair(dir); !errors.Is(err, ErrNoWAL) {
		t.Errorf("Repair: %v", err)
	}
}

// Saves from several goroutines are serialised: every record lands whole and
// the CRC chain holds.
func TestConcurrentSaves(t *testing.T) {
	dir, w := newWAL(t, Options{SegmentSize: 8192, Sync: SyncNever})
	const workers, each = 4, 50
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				index := uint64(g*each + i + 1)
				if err := w.Save(hardState(1, 1, index), []*raftpb.Entry{entry(1, index, "concurrent")}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	items, errs := decodeDir(t, dir, DecoderOptions{VerifyTail: true})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	entries := 0
	for _, it := range items {
		if it.Type == RecordEntry {
			entries++
		}
	}
	if entries != workers*each {
		t.Errorf("%d entries, want %d", entries, workers*each)
	}
}
