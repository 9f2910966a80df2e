package walfmt

import (
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// TestValidSnapshots: the snapshot records a member may restart from are
// those at or below the last hard state's commit; a record whose hard state
// never reached the WAL (a crash right after it) is not one.
func TestValidSnapshots(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w, err := Create(dir, testMetadata(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ents := []*raftpb.Entry{entry(1, 1, "a"), entry(1, 2, "b"), entry(1, 3, "c")}
	if err := w.Save(hardState(1, 1, 3), ents); err != nil {
		t.Fatal(err)
	}
	if err := w.SaveSnapshot(Snapshot{Index: 2, Term: 1, ConfState: &raftpb.ConfState{}}); err != nil {
		t.Fatal(err)
	}
	// A snapshot received from the leader, recorded before the hard state
	// that commits it, which the crash kept from the WAL.
	if err := w.SaveSnapshot(Snapshot{Index: 9, Term: 2, ConfState: &raftpb.ConfState{}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ValidSnapshots(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Index != 0 || got[1].Index != 2 || got[1].Term != 1 {
		t.Errorf("valid snapshots %+v, want the empty one and index 2", got)
	}
}
