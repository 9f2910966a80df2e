package store

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/etcdref"
)

// TestEtcdReadsOurFile writes a db with pkg/store and has real etcd 3.7.3's
// etcdutl read it: snapshot status succeeds with our revision and key
// count, and hashkv equals ours at every revision after the compaction.
func TestEtcdReadsOurFile(t *testing.T) {
	etcdutl := etcdref.Bin(t, "etcdutl")
	path := filepath.Join(t.TempDir(), "db")
	s := openStoreAt(t, path)
	put := func(k, v string, lease int64) {
		if _, err := s.Put(&pb.PutRequest{Key: []byte(k), Value: []byte(v), Lease: lease}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 20; i++ {
		put(fmt.Sprintf("/app/%02d", i), fmt.Sprintf("value-%d", i), 0)
	}
	put("foo", "bar", 0)
	put("foo", "baz", 0)
	if _, err := s.DeleteRange(&pb.DeleteRangeRequest{Key: []byte("/app/03"), RangeEnd: []byte("/app/06")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn(&pb.TxnRequest{
		Compare: []*pb.Compare{{Key: []byte("foo"), Target: pb.Compare_VALUE, Result: pb.Compare_EQUAL, TargetUnion: &pb.Compare_Value{Value: []byte("baz")}}},
		Success: []*pb.RequestOp{
			{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("foo"), Value: []byte("qux")}}},
			{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("txn"), Value: []byte("x")}}},
		},
	}); err != nil {
		t.Fatal(err)
	}
	w := s.Write()
	if err := w.PutLease(LeaseRecord{ID: 0x1234, TTL: 60}); err != nil {
		t.Fatal(err)
	}
	w.End()
	put("leased", "v", 0x1234)
	done, err := s.Compact(15)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	put("/app/01", "changed", 0)
	if _, err := s.DeleteRange(&pb.DeleteRangeRequest{Key: []byte("/app/02")}); err != nil {
		t.Fatal(err)
	}
	last := s.Rev()
	ours := map[int64]uint32{}
	for rev := int64(15); rev <= last; rev++ {
		h, err := s.HashKV(rev)
		if err != nil {
			t.Fatal(err)
		}
		ours[rev] = h.Hash
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command(etcdutl, "snapshot", "status", path, "-w", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("etcdutl snapshot status: %v\n%s", err, out)
	}
	var status struct {
		Revision int64  `json:"revision"`
		TotalKey int    `json:"totalKey"`
		Version  string `json:"version"`
	}
	if err := json.Unmarshal(out, &status); err != nil {
		t.Fatalf("etcdutl snapshot status output %q: %v", out, err)
	}
	if status.Revision != last || status.Version != StorageVersion {
		t.Errorf("etcdutl snapshot status: %+v, want revision %d version %s", status, last, StorageVersion)
	}
	compareHashKV(t, etcdutl, path, ours, 15)
}

// compareHashKV has etcdutl hash the file at path at every revision of
// ours and compares.
func compareHashKV(t *testing.T, etcdutl, path string, ours map[int64]uint32, compactRev int64) {
	t.Helper()
	for rev, hash := range ours {
		out, err := exec.Command(etcdutl, "hashkv", path, "--rev", fmt.Sprint(rev), "-w", "json").CombinedOutput()
		if err != nil {
			t.Fatalf("etcdutl hashkv --rev %d: %v\n%s", rev, err, out)
		}
		var theirs struct {
			Hash            uint32 `json:"hash"`
			CompactRevision int64  `json:"compactRevision"`
		}
		if err := json.Unmarshal(out, &theirs); err != nil {
			t.Fatalf("etcdutl hashkv output %q: %v", out, err)
		}
		if theirs.Hash != hash || theirs.CompactRevision != compactRev {
			t.Errorf("hashkv at %d: etcd %d (compacted %d), ours %d", rev, theirs.Hash, theirs.CompactRevision, hash)
		}
	}
}

// TestHashKVWhenCompactionKeepsNothingVisible is the history where every
// revision a compaction kept has been superseded or deleted since: etcd
// still leaves them out of the hash.
func TestHashKVWhenCompactionKeepsNothingVisible(t *testing.T) {
	etcdutl := etcdref.Bin(t, "etcdutl")
	path := filepath.Join(t.TempDir(), "db")
	s := openStoreAt(t, path)
	mustPut(t, s, "a", "1")                                                            // 2
	mustPut(t, s, "b", "2")                                                            // 3
	mustPut(t, s, "b", "3")                                                            // 4
	if _, err := s.DeleteRange(&pb.DeleteRangeRequest{Key: []byte("a")}); err != nil { // 5
		t.Fatal(err)
	}
	done, err := s.Compact(3)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	ours := map[int64]uint32{}
	for rev := int64(3); rev <= s.Rev(); rev++ {
		h, err := s.HashKV(rev)
		if err != nil {
			t.Fatal(err)
		}
		ours[rev] = h.Hash
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	compareHashKV(t, etcdutl, path, ours, 3)
}

// TestHashKVAroundCompactionOnADeleteMatchesEtcd: a compaction at the
// revision of a delete (whose tombstone etcd keeps, for watches that start
// there). etcd's server answers HashKV at the compaction revision with the
// hash it had before the compaction, and later revisions as etcdutl
// computes them on the compacted file; so does the store.
func TestHashKVAroundCompactionOnADeleteMatchesEtcd(t *testing.T) {
	etcdutl := etcdref.Bin(t, "etcdutl")
	dir := t.TempDir()
	path, pre := filepath.Join(dir, "db"), filepath.Join(dir, "before-compaction.db")
	s := openStoreAt(t, path)
	compactRev := populateForHashKV(t, s, "key0", "key1")[1]
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	copyFile(t, path, pre)
	s = openStoreAt(t, path)
	done, err := s.Compact(compactRev)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	ours := map[int64]uint32{}
	for rev := compactRev; rev <= s.Rev(); rev++ {
		h, err := s.HashKV(rev)
		if err != nil {
			t.Fatal(err)
		}
		ours[rev] = h.Hash
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	compareHashKV(t, etcdutl, pre, map[int64]uint32{compactRev: ours[compactRev]}, -1)
	delete(ours, compactRev)
	compareHashKV(t, etcdutl, path, ours, compactRev)
	// After a restart the hash of the compaction is gone, in etcd too:
	// HashKV at the compaction revision is then computed on the file.
	s = openStoreAt(t, path)
	h, err := s.HashKV(compactRev)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	compareHashKV(t, etcdutl, path, map[int64]uint32{compactRev: h.Hash}, compactRev)
}
