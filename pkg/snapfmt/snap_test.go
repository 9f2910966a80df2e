package snapfmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// fixtureSnap is the .snap file a real etcd 3.7.3 wrote (copied from
// testdata/etcd-3.7.3/data/member/snap of the repository).
const fixtureSnap = "testdata/0000000000000002-0000000000000029.snap"

const fixtureNodeID = 0x1f4d227d440d78c2

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestReadFixture(t *testing.T) {
	snap, err := Read(fixtureSnap)
	if err != nil {
		t.Fatal(err)
	}
	md := snap.GetMetadata()
	if md.GetIndex() != 0x29 || md.GetTerm() != 2 {
		t.Errorf("metadata index %#x term %d", md.GetIndex(), md.GetTerm())
	}
	cs := md.GetConfState()
	if len(cs.GetVoters()) != 1 || cs.GetVoters()[0] != fixtureNodeID || len(cs.GetLearners()) != 0 || cs.GetAutoLeave() {
		t.Errorf("conf state %v", cs)
	}
	// etcd 3.7 still puts the v2 store's JSON (membership) in the snapshot.
	var v2 struct {
		Root           map[string]any
		CurrentVersion int
	}
	if err := json.Unmarshal(snap.GetData(), &v2); err != nil || v2.Root == nil || v2.CurrentVersion != 2 {
		t.Errorf("snapshot data is not the v2 store JSON: %v", err)
	}
	// Our encoder writes the same bytes.
	b, err := Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, readFile(t, fixtureSnap)) {
		t.Error("re-encoded fixture differs from the file etcd wrote")
	}
}

func TestReadDamaged(t *testing.T) {
	orig := readFile(t, fixtureSnap)
	dir := t.TempDir()
	path := filepath.Join(dir, filepath.Base(fixtureSnap))

	// Every truncation is reported as such.
	for n := 1; n < len(orig); n += 1 + n/50 {
		if _, err := Unmarshal(orig[:n]); !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut to %d bytes: %v", n, err)
		}
	}
	writeFile(t, path, orig[:len(orig)/2])
	if _, err := Read(path); !errors.Is(err, ErrTruncated) {
		t.Errorf("truncated file: %v", err)
	}

	writeFile(t, path, nil)
	if _, err := Read(path); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty file: %v", err)
	}

	for _, off := range []int{2, 100, len(orig) - 1} { // the crc, the data, the metadata
		b := bytes.Clone(orig)
		b[off] ^= 0x01
		writeFile(t, path, b)
		if _, err := Read(path); !errors.Is(err, ErrCRCMismatch) {
			t.Errorf("byte %d flipped: %v", off, err)
		}
	}

	writeFile(t, path, []byte{0x0a, 0x01, 0x00})
	if _, err := Read(path); !errors.Is(err, ErrBadFormat) {
		t.Errorf("wrong wire type: %v", err)
	}

	renamed := filepath.Join(dir, FileName(2, 0x30))
	writeFile(t, renamed, orig)
	if _, err := Read(renamed); !errors.Is(err, ErrNameMismatch) {
		t.Errorf("renamed file: %v", err)
	}
}

func testSnapshot(term, index uint64) *raftpb.Snapshot {
	return &raftpb.Snapshot{
		Data: []byte(`{"v":1}`),
		Metadata: &raftpb.SnapshotMetadata{
			Term: proto.Uint64(term), Index: proto.Uint64(index),
			ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}},
		},
	}
}

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	want := testSnapshot(3, 100)
	path, err := Write(dir, want)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "0000000000000003-0000000000000064.snap" {
		t.Errorf("path %s", path)
	}
	got, err := Read(path)
	if err != nil || !proto.Equal(got, want) {
		t.Fatalf("read back %v, %v", got, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in dir, want only the snapshot", len(ents))
	}
	if _, err := Write(dir, &raftpb.Snapshot{}); err == nil {
		t.Error("empty snapshot written")
	}
}

func TestLoadNewestSkipsBroken(t *testing.T) {
	dir := t.TempDir()
	orig := readFile(t, fixtureSnap)
	writeFile(t, filepath.Join(dir, filepath.Base(fixtureSnap)), orig)
	older, err := Write(dir, testSnapshot(1, 10))
	if err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, FileName(2, 0x40))
	writeFile(t, broken, orig[:100])
	badName := filepath.Join(dir, "latest.snap")
	writeFile(t, badName, orig)
	writeFile(t, filepath.Join(dir, "db"), []byte("bbolt"))
	writeFile(t, filepath.Join(dir, "0000000000000050.snap.db"), []byte("bbolt"))

	snap, file, skipped, err := LoadNewest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if file.Path != filepath.Join(dir, filepath.Base(fixtureSnap)) || file.Term != 2 || file.Index != 0x29 || snap.GetMetadata().GetIndex() != 0x29 {
		t.Errorf("loaded %+v", file)
	}
	if len(skipped) != 2 {
		t.Fatalf("skipped %v", skipped)
	}
	reasons := map[string]error{}
	for _, s := range skipped {
		reasons[s.Path] = s.Err
	}
	if !errors.Is(reasons[badName], ErrBadName) || !errors.Is(reasons[broken], ErrTruncated) {
		t.Errorf("reasons %v", reasons)
	}

	files, _, err := List(dir)
	if err != nil || len(files) != 3 || files[0].Path != older || files[2].Path != broken {
		t.Errorf("List: %v, %v", files, err)
	}
	removed, err := Purge(dir, 1)
	if err != nil || len(removed) != 2 || removed[0] != older {
		t.Errorf("Purge: %v, %v", removed, err)
	}
	if _, _, _, err := LoadNewest(dir); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("only a broken snapshot left: %v", err)
	}
	if _, _, _, err := LoadNewest(t.TempDir()); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("empty dir: %v", err)
	}
}

func TestParseFileName(t *testing.T) {
	term, index, err := ParseFileName("0000000000000002-0000000000000029.snap")
	if err != nil || term != 2 || index != 0x29 {
		t.Errorf("got %d %d %v", term, index, err)
	}
	for _, name := range []string{"2-29.snap", "0000000000000002-0000000000000029.wal", "000000000000000x-0000000000000029.snap", "00000000000000020000000000000029.snap"} {
		if _, _, err := ParseFileName(name); !errors.Is(err, ErrBadName) {
			t.Errorf("%q: %v", name, err)
		}
	}
}

// FuzzDecodeSnap: any bytes give a snapshot or an error, never a panic; a
// snapshot that decodes encodes to bytes that decode to the same snapshot.
func FuzzDecodeSnap(f *testing.F) {
	orig, err := os.ReadFile(fixtureSnap)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(orig)
	small, _ := Marshal(testSnapshot(1, 1))
	f.Add(small)
	f.Add([]byte{0x08, 0x00, 0x12, 0x00})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		snap, err := Unmarshal(b)
		if err != nil {
			if snap != nil {
				t.Fatal("snapshot and error")
			}
			return
		}
		again, err := Marshal(snap)
		if err != nil {
			t.Fatal(err)
		}
		snap2, err := Unmarshal(again)
		if err != nil || !proto.Equal(snap, snap2) {
			t.Fatalf("re-decoded %v, %v", snap2, err)
		}
	})
}
