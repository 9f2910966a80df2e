package forensics

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/testnet"
	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/store"
)

var flagSeed = flag.Uint64("seed", 0, "seed of the random histories (0: random, printed)")

// orphanLease is a lease ID the random histories attach keys to and that
// is in no lease bucket (as a lease revoked after the revision restored).
const orphanLease = 0x77

// randomHistory writes a random history to a new store: puts (some with
// orphanLease), deletes of a key or a prefix, txns of several puts, and
// one compaction at a random revision. It returns the store (open) and the
// snapshot file of it.
func randomHistory(t *testing.T, rng *rand.Rand) (*store.Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := store.Open(store.Config{Backend: backend.Config{Path: filepath.Join(dir, "db")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	key := func() []byte { return fmt.Appendf(nil, "/%c/%d", 'a'+rng.IntN(3), rng.IntN(5)) }
	put := func(i int) *pb.PutRequest {
		r := &pb.PutRequest{Key: key(), Value: fmt.Appendf(nil, "v%d", i)}
		if rng.IntN(5) == 0 {
			r.Lease = orphanLease
		}
		return r
	}
	ops := 60 + rng.IntN(120)
	compactAt := rng.IntN(ops)
	for i := range ops {
		var err error
		switch n := rng.IntN(10); {
		case n < 6:
			_, err = s.Put(put(i))
		case n < 7:
			_, err = s.DeleteRange(&pb.DeleteRangeRequest{Key: key()})
		case n < 8:
			p := fmt.Appendf(nil, "/%c/", 'a'+rng.IntN(3))
			_, err = s.DeleteRange(&pb.DeleteRangeRequest{Key: p, RangeEnd: append(p[:len(p)-1:len(p)-1], '0')})
		default:
			a, b := put(i), put(i)
			if bytes.Equal(a.Key, b.Key) {
				b.Key = append(b.Key, 'x')
			}
			_, err = s.Txn(&pb.TxnRequest{Success: []*pb.RequestOp{
				{Request: &pb.RequestOp_RequestPut{RequestPut: a}},
				{Request: &pb.RequestOp_RequestPut{RequestPut: b}},
			}})
		}
		if err != nil {
			t.Fatal(err)
		}
		if i == compactAt && s.Rev() > 1 {
			done, err := s.Compact(1 + rng.Int64N(s.Rev()))
			if err != nil {
				t.Fatal(err)
			}
			<-done
		}
	}
	var buf bytes.Buffer
	if _, err := s.Backend().WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	path := filepath.Join(dir, "snapshot.db")
	if err := os.WriteFile(path, append(buf.Bytes(), sum[:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// all reads every key of s at rev (0: the latest).
func all(t *testing.T, s *store.Store, rev int64) *pb.RangeResponse {
	t.Helper()
	resp, err := s.Range(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}, Revision: rev})
	if err != nil {
		t.Fatalf("range at %d: %v", rev, err)
	}
	return resp
}

func sameKVs(a, b *pb.RangeResponse) bool {
	if len(a.Kvs) != len(b.Kvs) {
		return false
	}
	for i := range a.Kvs {
		if !proto.Equal(a.Kvs[i], b.Kvs[i]) {
			return false
		}
	}
	return true
}

// TestRestoreToRevision restores random histories to every revision they
// hold (from the compaction on): the restored store's keys are the
// original's as of that revision, its history up to it is the original's,
// it holds no later revision, and the keys whose lease is gone are
// counted. A revision before the compaction or after the latest one is
// refused and leaves nothing behind.
func TestRestoreToRevision(t *testing.T) {
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	for i := range uint64(3) {
		seed := seed + i
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("again: go test ./internal/forensics/ -run TestRestoreToRevision -seed %d", seed)
				}
			}()
			rng := rand.New(rand.NewPCG(seed, seed))
			orig, snap := randomHistory(t, rng)
			compacted, latest := max(orig.CompactRev(), 1), orig.Rev()
			for rev := compacted; rev <= latest; rev++ {
				dir := filepath.Join(t.TempDir(), "restored")
				out := mustRun(t, "snapshot", "restore", snap, "--data-dir", dir, "--to-revision", fmt.Sprint(rev))
				want := all(t, orig, rev)
				orphans := 0
				for _, kv := range want.Kvs {
					if kv.Lease == orphanLease {
						orphans++
					}
				}
				if !strings.Contains(out, fmt.Sprintf("Rewound from revision %d to %d", latest, rev)) ||
					(orphans > 0) != strings.Contains(out, fmt.Sprintf("Warning: %d key(s) of revision %d", orphans, rev)) {
					t.Errorf("revision %d (%d orphaned keys): output\n%s", rev, orphans, out)
				}
				s, err := store.Open(store.Config{Backend: backend.Config{Path: dbPath(dir)}})
				if err != nil {
					t.Fatal(err)
				}
				got := all(t, s, 0)
				if !sameKVs(got, want) || got.Header.Revision != rev {
					t.Errorf("restored to %d: revision %d with %v\nwant %v", rev, got.Header.Revision, got.Kvs, want.Kvs)
				}
				if r := compacted + rng.Int64N(rev-compacted+1); !sameKVs(all(t, s, r), all(t, orig, r)) {
					t.Errorf("restored to %d: its revision %d differs from the original's", rev, r)
				}
				s.Close()
			}
			for _, rev := range []int64{compacted - 1, latest + 1} {
				if rev < 1 {
					continue
				}
				dir := filepath.Join(t.TempDir(), "refused")
				msg := mustFail(t, []string{"--to-revision", fmt.Sprint(rev)}, "snapshot", "restore", snap, "--data-dir", dir, "--to-revision", fmt.Sprint(rev))
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("%s: the data dir was left behind (%v)", msg, err)
				}
			}
		})
	}
}

// TestRestoreToRevisionServedByEtcd: a store restored to a past revision
// (from a stopped member's data directory), served by etcd 3.7.3, has the
// keys the original had then.
func TestRestoreToRevisionServedByEtcd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	orig, snap := randomHistory(t, rng)
	rev := (max(orig.CompactRev(), 1) + orig.Rev()) / 2
	// The original's data directory, as a stopped member leaves it.
	src := filepath.Join(t.TempDir(), "member-data")
	if err := os.MkdirAll(snapDir(src), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dbPath(src), db[:len(db)-sha256.Size], 0o600); err != nil {
		t.Fatal(err)
	}
	dir, peer := filepath.Join(t.TempDir(), "restored"), testnet.FreeURL(t)
	mustRun(t, "snapshot", "restore", src, "--data-dir", dir, "--to-revision", fmt.Sprint(rev),
		"--name", "r1", "--initial-cluster", "r1="+peer, "--initial-advertise-peer-urls", peer, "--initial-cluster-token", "pitr")
	m := startEtcd(t, dir, "r1", peer, "pitr")
	var got pb.RangeResponse
	if err := json.Unmarshal([]byte(m.etcdctl(t, "get", "", "--from-key", "-w", "json")), &got); err != nil {
		t.Fatal(err)
	}
	want := all(t, orig, rev)
	if len(got.Kvs) != len(want.Kvs) {
		t.Fatalf("etcd serves %d keys, the original had %d at revision %d", len(got.Kvs), len(want.Kvs), rev)
	}
	for i := range want.Kvs {
		if !proto.Equal(got.Kvs[i], want.Kvs[i]) {
			t.Errorf("key %d: etcd serves %v, the original had %v", i, got.Kvs[i], want.Kvs[i])
		}
	}
	if got.Header.GetRevision() != rev {
		t.Errorf("etcd at revision %d, want %d", got.Header.GetRevision(), rev)
	}
}
