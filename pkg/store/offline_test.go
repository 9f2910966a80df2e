package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/boltfile"
)

// TestOfflineIndexAgreesWithStore writes a random history with the store,
// then checks, read-only, that the offline index gives the same HashKV at
// every revision, the same revisions and the same number of live keys.
func TestOfflineIndexAgreesWithStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(Config{Backend: backend.Config{Path: path}})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		key := fmt.Appendf(nil, "k%02d", rng.IntN(30))
		switch r := rng.IntN(10); {
		case r < 7:
			_, err = s.Put(&pb.PutRequest{Key: key, Value: fmt.Appendf(nil, "v%d", i)})
		case r < 9:
			_, err = s.DeleteRange(&pb.DeleteRangeRequest{Key: key})
		default:
			_, err = s.Txn(&pb.TxnRequest{Success: []*pb.RequestOp{
				{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: key, Value: []byte("t")}}},
				{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("k9"), RangeEnd: []byte("k99")}}},
			}})
		}
		if err != nil {
			t.Fatal(err)
		}
		if i == 250 {
			done, err := s.Compact(s.Rev() - 40)
			if err != nil {
				t.Fatal(err)
			}
			<-done
		}
	}
	// A store answers HashKV at the revision of a compaction it ran with
	// the hash from before it; reopened, it computes it on the file, as the
	// offline index does.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(Config{Backend: backend.Config{Path: path}}); err != nil {
		t.Fatal(err)
	}
	rev, compactRev := s.Rev(), s.CompactRev()
	want := map[int64]KVHash{}
	for r := compactRev; r <= rev; r++ {
		if want[r], err = s.HashKV(r); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.Range(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}, CountOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := boltfile.Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	idx, err := ReadIndex(db)
	if err != nil {
		t.Fatal(err)
	}
	if idx.Rev() != rev || idx.CompactRev() != compactRev || int64(idx.LiveKeys()) != all.Count {
		t.Errorf("offline: rev %d compacted %d, %d keys; store: rev %d compacted %d, %d keys",
			idx.Rev(), idx.CompactRev(), idx.LiveKeys(), rev, compactRev, all.Count)
	}
	for r := compactRev; r <= rev; r++ {
		got, err := idx.HashKV(r)
		if err != nil || got != want[r] {
			t.Errorf("HashKV(%d) = %+v, %v; the store says %+v", r, got, err, want[r])
		}
	}
	if _, err := idx.HashKV(compactRev - 1); !errors.Is(err, ErrCompacted) {
		t.Errorf("HashKV below the compaction: %v", err)
	}
	if _, err := idx.HashKV(rev + 1); !errors.Is(err, ErrFutureRev) {
		t.Errorf("HashKV past the end: %v", err)
	}
}

func TestOfflineFixture(t *testing.T) {
	db, err := boltfile.Open(fixturePath("data", "member", "snap", "db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	idx, err := ReadIndex(db)
	if err != nil {
		t.Fatal(err)
	}
	h, err := idx.HashKV(0)
	if err != nil || h != (KVHash{Hash: 1958326877, HashRevision: 63, CompactRevision: 10}) {
		t.Errorf("HashKV = %+v, %v; want etcdutl's", h, err)
	}
	if n := idx.LiveKeys(); n != 34 {
		t.Errorf("%d live keys, want 34", n)
	}
}

func TestDecodeBuckets(t *testing.T) {
	if _, err := DecodeUint64([]byte{1, 2}); err == nil {
		t.Error("DecodeUint64 accepted 2 bytes")
	}
}

// A file never compacted hashes with compact revision -1, online and
// offline; etcdutl 3.7.3 says {"hash":3628877040,"hashRevision":2,
// "compactRevision":-1} for the db of an etcd that applied `put a b`.
func TestHashKVNeverCompacted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openStoreAt(t, path)
	mustPut(t, s, "a", "b")
	want := KVHash{Hash: 3628877040, HashRevision: 2, CompactRevision: -1}
	if h, err := s.HashKV(0); err != nil || h != want {
		t.Errorf("HashKV = %+v, %v; want %+v", h, err, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := boltfile.Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	idx, err := ReadIndex(db)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := idx.HashKV(0); err != nil || h != want {
		t.Errorf("offline HashKV = %+v, %v; want %+v", h, err, want)
	}
}
