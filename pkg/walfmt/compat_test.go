package walfmt

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairnkv/cairn/internal/etcdref"
)

// referenceEtcdutl returns the path of the reference etcdutl 3.7.3, or
// skips the test with the reason.
func referenceEtcdutl(t *testing.T) string {
	t.Helper()
	return etcdref.Bin(t, "etcdutl")
}

func run(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

// TestEtcdReadsOurWAL has real etcd read a multi-segment WAL written by our
// Writer: `etcdutl migrate` to 3.6 (a downgrade from a 3.7 data dir) reads
// the whole WAL and checks the CRC chain of every segment. On a copy with a
// flipped byte it fails, so it did read.
func TestEtcdReadsOurWAL(t *testing.T) {
	etcdutl := referenceEtcdutl(t)

	dataDir := dataDirWithOurWAL(t, etcdutl)
	if out, err := run(t, etcdutl, "migrate", "--data-dir", dataDir, "--target-version", "3.6"); err != nil {
		t.Fatalf("etcd could not read our WAL: %v\n%s", err, out)
	}

	dataDir = dataDirWithOurWAL(t, etcdutl)
	items, _ := decodeDir(t, filepath.Join(dataDir, "member", "wal"), DecoderOptions{})
	var victim *Item
	for _, it := range items {
		if it.Segment.Seq == 2 && it.Type == RecordEntry {
			victim = it
			break
		}
	}
	flipByte(t, victim.Segment.Path, victim.Offset+frameHeaderSize+int64(RecordSize(victim.Record))-1)
	out, err := run(t, etcdutl, "migrate", "--data-dir", dataDir, "--target-version", "3.6")
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || !strings.Contains(out, "crc mismatch") {
		t.Fatalf("etcd accepted a damaged WAL: %v\n%s", err, out)
	}
}

// dataDirWithOurWAL has etcdutl restore the fixture snapshot into a data dir
// and replaces its WAL by one our Writer writes: the same metadata, conf
// change entry and snapshot record, then 300 puts over several segments.
func dataDirWithOurWAL(t *testing.T, etcdutl string) string {
	t.Helper()
	dataDir := filepath.Join(t.TempDir(), "data")
	if out, err := run(t, etcdutl, "snapshot", "restore", "../snapfmt/testdata/snapshot.db", "--data-dir", dataDir,
		"--name", "m1", "--initial-cluster", "m1=http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380"); err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}
	walDir := filepath.Join(dataDir, "member", "wal")

	// What etcd wrote: crc, metadata, empty snapshot, the member's conf
	// change entry, a hard state, the snapshot record at (1, 1), in a
	// segment preallocated to 64,000,000 bytes.
	items, errs := decodeDir(t, walDir, DecoderOptions{VerifyTail: true})
	if len(errs) != 0 || len(items) != 6 {
		t.Fatalf("restored WAL: %d records, errors %v", len(items), errs)
	}
	if st, _ := os.Stat(items[0].Segment.Path); st.Size() != SegmentSizeBytes {
		t.Errorf("etcd preallocated %d bytes, we %d", st.Size(), SegmentSizeBytes)
	}
	md, confEntry, snap := items[1].Metadata, items[3].Entry, *items[5].Snapshot
	if confEntry.GetType() != raftpb.EntryConfChange || snap.Index != 1 || snap.Term != 1 {
		t.Fatalf("restored WAL: entry %v, snapshot %+v", confEntry, snap)
	}

	if err := os.RemoveAll(walDir); err != nil {
		t.Fatal(err)
	}
	w, err := Create(walDir, md, Options{SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Save(hardState(1, md.GetNodeID(), 1), []*raftpb.Entry{confEntry}); err != nil {
		t.Fatal(err)
	}
	if err := w.SaveSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	for i := uint64(2); i <= 301; i++ {
		req := &etcdserverpb.InternalRaftRequest{
			Header: &etcdserverpb.RequestHeader{ID: i},
			Put:    &etcdserverpb.PutRequest{Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte("value")},
		}
		e := entry(2, i, "")
		e.Data = mustMarshal(t, req)
		if err := w.Save(hardState(2, md.GetNodeID(), i), []*raftpb.Entry{e}); err != nil {
			t.Fatal(err)
		}
	}
	segs := w.Segments()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(segs) < 5 {
		t.Fatalf("only %d segments", len(segs))
	}
	return dataDir
}
