package server

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/cairnkv/cairn/pkg/store"
)

// TestApplyClusterVersionMovesStorageVersion: the storage version follows
// the cluster version between 3.6 and 3.7, the layouts cairn writes, and a
// lowered cluster version forces a snapshot.
func TestApplyClusterVersionMovesStorageVersion(t *testing.T) {
	st, err := store.Open(store.Config{Backend: store.BackendConfig{Path: filepath.Join(t.TempDir(), "db")}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := createBuckets(st); err != nil {
		t.Fatal(err)
	}
	s := &Server{log: slog.New(slog.DiscardHandler)}
	s.store.Store(st)
	for _, c := range []struct {
		set, storage string
		forced       bool
	}{
		{"3.7.0", "3.7.0", false},
		{"3.6.0", "3.6.0", true},
		{"3.7.0", "3.7.0", false},
		{"3.6.0", "3.6.0", true},
		{"3.5.0", "3.6.0", true}, // etcd 3.5 had no storage version: left as is
		{"3.8.0", "3.6.0", false},
		{"not a version", "3.6.0", false},
	} {
		s.snapshotForced = false
		w := st.Write()
		if err := s.applyClusterVersion(w.Backend(), c.set); err != nil {
			t.Fatal(err)
		}
		if err := w.End(); err != nil {
			t.Fatal(err)
		}
		if s.ClusterVersion() != c.set || s.StorageVersion() != c.storage || s.snapshotForced != c.forced {
			t.Errorf("after setting %s: cluster version %s, storage version %s, snapshot forced %v; want %s, %v",
				c.set, s.ClusterVersion(), s.StorageVersion(), s.snapshotForced, c.storage, c.forced)
		}
	}
}
