package server

import (
	"log/slog"
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// TestPurgeKeepsMaxWALs: after a snapshot, the WAL segments beyond
// --max-wals are removed, oldest first, but never one the snapshot still
// needs for a replay.
func TestPurgeKeepsMaxWALs(t *testing.T) {
	dir := t.TempDir()
	w, err := walfmt.Create(filepath.Join(dir, "wal"), newMetadata(1, 1), walfmt.Options{SegmentSize: 4096, Sync: walfmt.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := uint64(1); i <= 200; i++ {
		e := &raftpb.Entry{Term: proto.Uint64(1), Index: proto.Uint64(i), Data: make([]byte, 100)}
		if err := w.Save(&raftpb.HardState{Term: proto.Uint64(1), Commit: proto.Uint64(i)}, []*raftpb.Entry{e}); err != nil {
			t.Fatal(err)
		}
	}
	segs, err := walfmt.ListSegments(filepath.Join(dir, "wal"))
	if err != nil || len(segs) < 5 {
		t.Fatalf("%d segments (%v): the test wants at least 5", len(segs), err)
	}
	s := &Server{cfg: memberconfig.Config{DataDir: dir, WALDir: filepath.Join(dir, "wal"), MaxWALs: 2}, wal: w, log: slog.New(slog.DiscardHandler)}
	// A snapshot in the third segment: the two before it may go, not the third.
	s.snapshotIndex = segs[2].Index
	if err := w.ReleaseLockTo(s.snapshotIndex); err != nil {
		t.Fatal(err)
	}
	s.purge()
	left, _ := walfmt.ListSegments(filepath.Join(dir, "wal"))
	if len(left) != len(segs)-2 || left[0].Seq != segs[2].Seq {
		t.Errorf("%d of %d segments left, the first %v; want from %v", len(left), len(segs), left[0].Name(), segs[2].Name())
	}
	// A snapshot at the end: all but the last two go.
	s.snapshotIndex = 200
	if err := w.ReleaseLockTo(s.snapshotIndex); err != nil {
		t.Fatal(err)
	}
	s.purge()
	if left, _ = walfmt.ListSegments(filepath.Join(dir, "wal")); len(left) != 2 {
		t.Errorf("%d segments left, want 2 (--max-wals)", len(left))
	}
}
