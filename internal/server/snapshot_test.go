package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnkv/cairn/internal/memberconfig"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// TestNoSnapshotPastTheLog: a member that installed a db the leader sent
// with a snapshot at 402, the db 53 entries newer (the leader's as it was
// when it sent it), and whose log holds nothing past 402 yet, takes no
// snapshot at its applied index 455 until its log reaches it: raft's
// storage panics on a snapshot past its last entry ("snapshot 455 is out
// of bound lastindex(402)"), which killed the member.
func TestNoSnapshotPastTheLog(t *testing.T) {
	cfg := memberconfig.Config{Name: "m1", DataDir: t.TempDir(), SnapshotCount: 10}.WithDefaults()
	if err := os.MkdirAll(filepath.Dir(cfg.DBPath()), 0o700); err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, members: newMembership(), storage: raft.NewMemoryStorage()}
	st, err := s.openStore()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s.store.Store(st)
	snap := &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(402), Term: proto.Uint64(2), ConfState: &raftpb.ConfState{Voters: []uint64{1}}}}
	if err := s.storage.ApplySnapshot(snap); err != nil {
		t.Fatal(err)
	}
	s.snapshotIndex, s.appliedIndex, s.confState = 402, 455, snap.Metadata.ConfState

	if err := s.maybeSnapshot(); err != nil {
		t.Fatal(err)
	}
	if s.snapshotIndex != 402 {
		t.Errorf("snapshot index %d, want 402 until the log reaches 455", s.snapshotIndex)
	}
	if got, _ := s.storage.Snapshot(); got.GetMetadata().GetIndex() != 402 {
		t.Errorf("raft's storage holds a snapshot at %d, want 402", got.GetMetadata().GetIndex())
	}
}
