package clusterversion

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/store"
)

// TestApplyClusterVersionMovesStorageVersion: the storage version follows
// the cluster version between 3.6 and 3.7, the layouts cairn writes, and a
// lowered cluster version is reported (the member forces a snapshot).
func TestApplyClusterVersionMovesStorageVersion(t *testing.T) {
	st, err := store.Open(store.Config{Backend: backend.Config{Path: filepath.Join(t.TempDir(), "db")}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := st.Write()
	if err := w.Backend().CreateBucket(store.BucketCluster); err != nil {
		t.Fatal(err)
	}
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
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
		w := st.Write()
		lowered, err := ApplyClusterVersion(w.Backend(), c.set, log)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.End(); err != nil {
			t.Fatal(err)
		}
		if ClusterVersion(st) != c.set || StorageVersion(st) != c.storage || lowered != c.forced {
			t.Errorf("after setting %s: cluster version %s, storage version %s, lowered %v; want %s, %v",
				c.set, ClusterVersion(st), StorageVersion(st), lowered, c.storage, c.forced)
		}
	}
}
