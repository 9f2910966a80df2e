package store

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/pkg/backend"
	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func mustPut(t testing.TB, s *Store, k, v string) *pb.PutResponse {
	t.Helper()
	resp, err := s.Put(&pb.PutRequest{Key: []byte(k), Value: []byte(v)})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func keysOf(resp *pb.RangeResponse) []string {
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

func TestRangeOptions(t *testing.T) {
	s := openTestStore(t)
	mustPut(t, s, "b", "2") // rev 2
	mustPut(t, s, "a", "3") // rev 3
	mustPut(t, s, "c", "1") // rev 4
	mustPut(t, s, "a", "9") // rev 5: a has version 2
	all := []byte{0}
	cases := []struct {
		name  string
		req   *pb.RangeRequest
		keys  string
		more  bool
		count int64
	}{
		{"prefix of all", &pb.RangeRequest{Key: all, RangeEnd: all}, "[a b c]", false, 3},
		{"from key", &pb.RangeRequest{Key: []byte("b"), RangeEnd: all}, "[b c]", false, 2},
		{"limit", &pb.RangeRequest{Key: all, RangeEnd: all, Limit: 2}, "[a b]", true, 3},
		{"limit equal to count", &pb.RangeRequest{Key: all, RangeEnd: all, Limit: 3}, "[a b c]", false, 3},
		{"sort by value", &pb.RangeRequest{Key: all, RangeEnd: all, SortTarget: pb.RangeRequest_VALUE}, "[c b a]", false, 3},
		{"sort by mod descending", &pb.RangeRequest{Key: all, RangeEnd: all, SortTarget: pb.RangeRequest_MOD, SortOrder: pb.RangeRequest_DESCEND}, "[a c b]", false, 3},
		{"sort by key descending with limit", &pb.RangeRequest{Key: all, RangeEnd: all, SortOrder: pb.RangeRequest_DESCEND, Limit: 1}, "[c]", true, 3},
		{"sort by create", &pb.RangeRequest{Key: all, RangeEnd: all, SortTarget: pb.RangeRequest_CREATE, SortOrder: pb.RangeRequest_ASCEND}, "[b a c]", false, 3},
		{"sort by version descending", &pb.RangeRequest{Key: all, RangeEnd: all, SortTarget: pb.RangeRequest_VERSION, SortOrder: pb.RangeRequest_DESCEND, Limit: 1}, "[a]", true, 3},
		{"min mod revision", &pb.RangeRequest{Key: all, RangeEnd: all, MinModRevision: 4}, "[a c]", false, 3},
		{"max create revision", &pb.RangeRequest{Key: all, RangeEnd: all, MaxCreateRevision: 2}, "[b]", false, 3},
		{"count only", &pb.RangeRequest{Key: all, RangeEnd: all, CountOnly: true}, "[]", false, 3},
		{"at revision 3", &pb.RangeRequest{Key: all, RangeEnd: all, Revision: 3}, "[a b]", false, 2},
		{"empty range", &pb.RangeRequest{Key: []byte("c"), RangeEnd: []byte("a")}, "[]", false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := s.Range(c.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(keysOf(resp)); got != c.keys || resp.More != c.more || resp.Count != c.count {
				t.Errorf("keys %s more %v count %d, want %s %v %d", got, resp.More, resp.Count, c.keys, c.more, c.count)
			}
			if resp.Header.Revision != 5 {
				t.Errorf("header revision %d, want 5", resp.Header.Revision)
			}
		})
	}
	resp, err := s.Range(&pb.RangeRequest{Key: []byte("a"), KeysOnly: true})
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Value != nil || resp.Kvs[0].Version != 2 || resp.Kvs[0].CreateRevision != 3 {
		t.Errorf("keys only: %v %v", resp, err)
	}
	if _, err := s.Range(&pb.RangeRequest{}); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("empty key: %v, want ErrEmptyKey", err)
	}
}

func TestPutOptions(t *testing.T) {
	s := openTestStore(t)
	if _, err := s.Put(&pb.PutRequest{Key: []byte("k"), IgnoreValue: true}); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("ignore_value on a missing key: %v, want ErrKeyNotFound", err)
	}
	if _, err := s.Put(&pb.PutRequest{Key: []byte("k"), IgnoreLease: true}); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("ignore_lease on a missing key: %v, want ErrKeyNotFound", err)
	}
	if s.Rev() != 1 {
		t.Fatalf("failed puts changed the revision to %d", s.Rev())
	}
	if _, err := s.Put(&pb.PutRequest{Key: []byte("k"), Value: []byte("v1"), Lease: 7}); err != nil {
		t.Fatal(err)
	}
	resp, err := s.Put(&pb.PutRequest{Key: []byte("k"), IgnoreValue: true, Lease: 8, PrevKv: true})
	if err != nil || string(resp.PrevKv.Value) != "v1" || resp.PrevKv.Lease != 7 {
		t.Fatalf("ignore_value put: %v %v", resp, err)
	}
	if _, err := s.Put(&pb.PutRequest{Key: []byte("k"), Value: []byte("v2"), IgnoreLease: true}); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Range(&pb.RangeRequest{Key: []byte("k")})
	if kv := got.Kvs[0]; string(kv.Value) != "v2" || kv.Lease != 8 || kv.Version != 3 {
		t.Errorf("after ignore_value and ignore_lease: %v, want value v2 lease 8 version 3", kv)
	}
	if _, err := s.Put(&pb.PutRequest{Key: []byte("k"), Value: []byte("x"), IgnoreValue: true}); !errors.Is(err, ErrValueProvided) {
		t.Errorf("value with ignore_value: %v", err)
	}
	if _, err := s.Put(&pb.PutRequest{Key: []byte("k"), Lease: 1, IgnoreLease: true}); !errors.Is(err, ErrLeaseProvided) {
		t.Errorf("lease with ignore_lease: %v", err)
	}
	if _, err := s.Put(&pb.PutRequest{Value: []byte("x")}); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("empty key: %v", err)
	}
	if keys := s.LeaseKeys(8); len(keys) != 1 || s.LeaseKeys(7) != nil && len(s.LeaseKeys(7)) != 0 {
		t.Errorf("lease 8 keys %q, lease 7 keys %q", keys, s.LeaseKeys(7))
	}
}

func TestDeleteRangeAndLease(t *testing.T) {
	s := openTestStore(t)
	for _, k := range []string{"a", "b", "c"} {
		if _, err := s.Put(&pb.PutRequest{Key: []byte(k), Value: []byte("v"), Lease: 5}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := s.DeleteRange(&pb.DeleteRangeRequest{Key: []byte("x")})
	if err != nil || resp.Deleted != 0 || resp.Header.Revision != 4 {
		t.Fatalf("deleting nothing: %v %v (must not add a revision)", resp, err)
	}
	resp, err = s.DeleteRange(&pb.DeleteRangeRequest{Key: []byte("a"), RangeEnd: []byte("b"), PrevKv: true})
	if err != nil || resp.Deleted != 1 || len(resp.PrevKvs) != 1 || resp.Header.Revision != 5 {
		t.Fatalf("delete a: %v %v", resp, err)
	}
	w := s.Write()
	deleted, err := w.DeleteLease(5)
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	if err != nil || deleted != 2 || s.Rev() != 6 {
		t.Fatalf("delete lease 5: %d keys, rev %d, %v; want 2 keys in one revision (6)", deleted, s.Rev(), err)
	}
	if got, _ := s.Range(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}}); got.Count != 0 {
		t.Errorf("%d keys left", got.Count)
	}
}

func TestTxnRules(t *testing.T) {
	s := openTestStore(t)
	mustPut(t, s, "a", "1")
	put := func(k string) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k), Value: []byte("v")}}}
	}
	del := func(k, end string) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte(k), RangeEnd: []byte(end)}}}
	}
	txn := func(success, failure []*pb.RequestOp) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Success: success, Failure: failure}}}
	}
	bad := map[string]*pb.TxnRequest{
		"key put twice":            {Success: []*pb.RequestOp{put("x"), put("x")}},
		"key put and deleted":      {Success: []*pb.RequestOp{put("x"), del("a", "z")}},
		"key put in a nested txn":  {Success: []*pb.RequestOp{put("x"), txn([]*pb.RequestOp{put("x")}, nil)}},
		"nested delete covers put": {Failure: []*pb.RequestOp{put("x"), txn(nil, []*pb.RequestOp{del("x", "")})}},
	}
	for name, req := range bad {
		if _, err := s.Txn(req); !errors.Is(err, ErrDuplicateKey) {
			t.Errorf("%s: %v, want ErrDuplicateKey", name, err)
		}
	}
	ok := &pb.TxnRequest{Success: []*pb.RequestOp{put("x"), txn([]*pb.RequestOp{put("y")}, []*pb.RequestOp{put("y")})}}
	if err := ValidateTxn(ok, 128); err != nil {
		t.Errorf("the same key in both branches of a nested txn: %v", err)
	}
	if err := ValidateTxn(&pb.TxnRequest{Success: []*pb.RequestOp{put("x"), put("y")}}, 1); !errors.Is(err, ErrTooManyOps) {
		t.Errorf("too many ops: %v", err)
	}
	// An ignore_value put on a missing key fails the whole txn: nothing is written.
	resp, err := s.Txn(&pb.TxnRequest{Success: []*pb.RequestOp{put("p"),
		{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("missing"), IgnoreValue: true}}}}})
	if !errors.Is(err, ErrKeyNotFound) || s.Rev() != 2 {
		t.Errorf("txn with a failing put: %v %v, rev %d (want ErrKeyNotFound and no change)", resp, err, s.Rev())
	}
	// A nested txn's compare sees the state before the outer txn wrote.
	nested := &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: []byte("a"), Target: pb.Compare_VALUE, Result: pb.Compare_EQUAL, TargetUnion: &pb.Compare_Value{Value: []byte("1")}}},
		Success: []*pb.RequestOp{put("b")},
		Failure: []*pb.RequestOp{put("c")},
	}
	resp, err = s.Txn(&pb.TxnRequest{Success: []*pb.RequestOp{put("a"), {Request: &pb.RequestOp_RequestTxn{RequestTxn: nested}}}})
	if err != nil || !resp.Responses[1].GetResponseTxn().Succeeded || resp.Header.Revision != 3 {
		t.Fatalf("nested txn: %v %v", resp, err)
	}
	got, _ := s.Range(&pb.RangeRequest{Key: []byte("b")})
	if len(got.Kvs) != 1 || got.Kvs[0].ModRevision != 3 {
		t.Errorf("b written by the nested txn: %v (want mod revision 3, the outer txn's)", got.Kvs)
	}
}

func TestCompaction(t *testing.T) {
	s := openTestStore(t)
	for i := 0; i < 50; i++ {
		mustPut(t, s, fmt.Sprintf("k%d", i%5), fmt.Sprint(i))
	}
	if _, err := s.Compact(60); !errors.Is(err, ErrFutureRev) {
		t.Errorf("compact beyond the current revision: %v", err)
	}
	// As etcd 3.7.3: a store never compacted takes a compaction at 0, once.
	done, err := s.Compact(0)
	if err != nil {
		t.Fatalf("compact at 0, never compacted: %v", err)
	}
	<-done
	if _, err := s.Compact(0); !errors.Is(err, ErrCompacted) {
		t.Errorf("compact at 0 again: %v", err)
	}
	done, err = s.Compact(40)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	if _, err := s.Compact(40); !errors.Is(err, ErrCompacted) {
		t.Errorf("compact at the compacted revision again: %v", err)
	}
	if _, err := s.Range(&pb.RangeRequest{Key: []byte("k1"), Revision: 39}); !errors.Is(err, ErrCompacted) {
		t.Errorf("read at 39: %v", err)
	}
	resp, err := s.Range(&pb.RangeRequest{Key: []byte("k"), RangeEnd: []byte("l"), Revision: 40})
	if err != nil || resp.Count != 5 {
		t.Fatalf("read at 40: %v %v", resp, err)
	}
	// Only the 5 values visible at 40 and the 11 written after it are left.
	n := 0
	r := s.Read()
	r.rt.Range(BucketKey, nil, nil, func(k, v []byte) bool { n++; return true })
	r.End()
	if n != 5+11 {
		t.Errorf("%d revisions left in the backend, want 16", n)
	}
	rt := s.b.Read()
	finished, _ := s.readCompactRev(rt, MetaFinishedCompactRev)
	rt.Close()
	if finished != 40 {
		t.Errorf("finishedCompactRev %d, want 40", finished)
	}
}

// A compaction interrupted by a close resumes on the next open.
func TestCompactionResumes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(Config{Backend: backend.Config{Path: path}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		mustPut(t, s, "k", fmt.Sprint(i))
	}
	w := s.Write()
	// Schedule without letting the compactor run: record it as an
	// interrupted compaction would leave it.
	if err := w.wt.Put(BucketMeta, MetaScheduledCompactRev, RevisionKey(Revision{Main: 20}, false)); err != nil {
		t.Fatal(err)
	}
	w.End()
	s.Close()
	var log bytes.Buffer
	s, err = Open(Config{Backend: backend.Config{Path: path}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.CompactRev() != 20 {
		t.Fatalf("compact revision after reopen: %d", s.CompactRev())
	}
	if s.compactor.resumed == nil {
		t.Fatal("the interrupted compaction was not resumed")
	}
	<-s.compactor.resumed
	rt := s.b.Read()
	finished, _ := s.readCompactRev(rt, MetaFinishedCompactRev)
	rt.Close()
	if finished != 20 {
		t.Errorf("finishedCompactRev %d after the resumed compaction, want 20", finished)
	}
	if !strings.Contains(log.String(), `msg="finished scheduled compaction" compact-revision=20`) {
		t.Errorf("no etcd line for the finished compaction in the log:\n%s", log.String())
	}
}

func TestRefusesForeignAndCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "foreign.db")
	db, err := bolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("users")); return err })
	db.Close()
	before, _ := os.ReadFile(foreign)
	if _, err := Open(Config{Backend: backend.Config{Path: foreign}}); err == nil {
		t.Error("opened a bbolt file of another program")
	}
	if after, _ := os.ReadFile(foreign); string(after) != string(before) {
		t.Error("the foreign file was modified")
	}

	garbage := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbage, []byte("this is not a bbolt file at all, just text that is long enough........"), 0o600)
	if _, err := Open(Config{Backend: backend.Config{Path: garbage}}); err == nil {
		t.Error("opened a text file")
	}

	badValue := filepath.Join(dir, "badvalue.db")
	s, err := Open(Config{Backend: backend.Config{Path: badValue}})
	if err != nil {
		t.Fatal(err)
	}
	w := s.Write()
	w.wt.Put(BucketKey, RevisionKey(Revision{Main: 2}, false), []byte{0xff, 0xff, 0xff})
	w.End()
	s.Close()
	if _, err := Open(Config{Backend: backend.Config{Path: badValue}}); err == nil {
		t.Error("opened a file whose key bucket holds a value that is not a KeyValue")
	} else {
		t.Logf("as expected: %v", err)
	}
}

func TestReadsSeeUncommittedWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(Config{Backend: backend.Config{Path: path, BatchInterval: 1 << 40, BatchLimit: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustPut(t, s, "k", "v")
	resp, err := s.Range(&pb.RangeRequest{Key: []byte("k")})
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("a write is not visible before its batch commits: %v %v", resp, err)
	}
	// (Whether it is in the file or in the write buffer, pkg/backend's
	// TestReadsSeeUncommittedWrites checks.)
	if err := s.b.ForceCommit(); err != nil {
		t.Fatal(err)
	}
	resp, err = s.Range(&pb.RangeRequest{Key: []byte("k")})
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("after commit: %v %v", resp, err)
	}
}

func TestDefrag(t *testing.T) {
	s := openTestStore(t)
	for i := 0; i < 2000; i++ {
		mustPut(t, s, fmt.Sprintf("k%04d", i%100), string(make([]byte, 512)))
	}
	done, _ := s.Compact(s.Rev())
	<-done
	s.b.ForceCommit()
	before, inUse := s.b.Size(), s.b.SizeInUse()
	hash, _ := s.HashKV(0)
	if err := s.b.Defrag(); err != nil {
		t.Fatal(err)
	}
	after := s.b.Size()
	if after >= before || inUse > before {
		t.Errorf("size %d → %d (in use %d): defrag did not shrink the file", before, after, inUse)
	}
	if h, _ := s.HashKV(0); h != hash {
		t.Errorf("hash changed by defrag: %v → %v", hash, h)
	}
	mustPut(t, s, "after", "defrag")
	if resp, _ := s.Range(&pb.RangeRequest{Key: []byte("after")}); len(resp.Kvs) != 1 {
		t.Error("write after defrag lost")
	}
}

// populateForHashKV writes the history of etcd's hashkv tests: 40
// operations from revision 2 on, each a txn putting every key, but every
// tenth a delete of the first key. It returns the revisions of the deletes.
func populateForHashKV(t *testing.T, s *Store, keys ...string) (tombstones []int64) {
	t.Helper()
	for i := 1; i <= 40; i++ {
		if i%10 == 0 {
			resp, err := s.DeleteRange(&pb.DeleteRangeRequest{Key: []byte(keys[0])})
			if err != nil || resp.Deleted != 1 {
				t.Fatalf("delete %s: %v %v", keys[0], resp, err)
			}
			tombstones = append(tombstones, resp.Header.Revision)
			continue
		}
		var ops []*pb.RequestOp
		for _, k := range keys {
			ops = append(ops, &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k), Value: []byte(fmt.Sprint(i))}}})
		}
		if _, err := s.Txn(&pb.TxnRequest{Success: ops}); err != nil {
			t.Fatal(err)
		}
	}
	return tombstones
}

// etcd's TestVerifyHashKVAfterCompactAndDefrag: HashKV at the revision of
// a compaction is the same before and after it (and a defragmentation),
// with the compact revision that was current before it (-1 for none), as
// etcd 3.7.3 answers; the later revisions hash as of the new compaction.
func TestHashKVAtCompactionRevisionSurvivesCompaction(t *testing.T) {
	s := openTestStore(t)
	if h, err := s.HashKV(0); err != nil || h.CompactRevision != -1 {
		t.Errorf("HashKV of a store never compacted: %+v, %v; want compact revision -1", h, err)
	}
	tombs := populateForHashKV(t, s, "key0", "key1")
	prev := int64(-1)
	for _, rev := range []int64{tombs[0], tombs[0] + 5, tombs[2]} { // on a delete, on a put, on a delete
		before, err := s.HashKV(rev)
		if err != nil {
			t.Fatal(err)
		}
		if before.CompactRevision != prev || before.HashRevision != rev {
			t.Errorf("HashKV(%d) before compacting there: %+v, want compact revision %d", rev, before, prev)
		}
		done, err := s.Compact(rev)
		if err != nil {
			t.Fatal(err)
		}
		<-done
		if err := s.b.Defrag(); err != nil {
			t.Fatal(err)
		}
		after, err := s.HashKV(rev)
		if err != nil || after != before {
			t.Errorf("HashKV(%d) after compacting there and defragmenting: %+v, %v; before: %+v", rev, after, err, before)
		}
		if next, err := s.HashKV(rev + 1); err != nil || next.CompactRevision != rev {
			t.Errorf("HashKV(%d) after compacting at %d: %+v, %v; want compact revision %d", rev+1, rev, next, err, rev)
		}
		prev = rev
	}
	// As etcd, the hash kept for an earlier compaction still answers.
	if h, err := s.HashKV(tombs[0]); err != nil || h.HashRevision != tombs[0] || h.CompactRevision != -1 {
		t.Errorf("HashKV(%d) after later compactions: %+v, %v; want the one kept from its compaction", tombs[0], h, err)
	}
}

// An operation with no request in it refuses the txn, wherever it is, as
// etcd does (`etcdserver: key not found`).
func TestTxnEmptyOp(t *testing.T) {
	s := openTestStore(t)
	put := &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("p"), Value: []byte("v")}}}
	for name, req := range map[string]*pb.TxnRequest{
		"alone":               {Success: []*pb.RequestOp{{}}},
		"after a put":         {Success: []*pb.RequestOp{put, {}}},
		"in the other branch": {Success: []*pb.RequestOp{put}, Failure: []*pb.RequestOp{{}}},
		"in a nested txn":     {Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Failure: []*pb.RequestOp{{}}}}}}},
	} {
		if err := ValidateTxn(req, 0); !errors.Is(err, ErrKeyNotFound) {
			t.Errorf("%s: ValidateTxn: %v, want ErrKeyNotFound", name, err)
		}
		if _, err := s.Txn(req); !errors.Is(err, ErrKeyNotFound) || s.Rev() != 1 {
			t.Errorf("%s: Txn: %v, rev %d; want ErrKeyNotFound and nothing written", name, err, s.Rev())
		}
	}
}

// With a lease check, a put to a lease it refuses fails, and so does the
// txn whose chosen branch has one, before anything is written; the branch
// not taken and keeping the key's lease do not ask.
func TestCheckLeases(t *testing.T) {
	s := openTestStore(t)
	errNoLease := errors.New("no such lease")
	var asked []int64
	check := func(id int64) error {
		asked = append(asked, id)
		if id == 7 {
			return nil
		}
		return errNoLease
	}
	write := func(f func(w *WriteTxn) error) error {
		w := s.Write()
		w.CheckLeases(check)
		return endWith(w, f(w))
	}
	put := func(k string, lease int64) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k), Value: []byte("v"), Lease: lease}}}
	}
	never := []*pb.Compare{{Key: []byte("k"), Target: pb.Compare_VERSION, Result: pb.Compare_GREATER, TargetUnion: &pb.Compare_Version{Version: 9}}}
	for name, f := range map[string]func(w *WriteTxn) error{
		"put": func(w *WriteTxn) error {
			_, err := w.ExecPut(put("k", 8).GetRequestPut())
			return err
		},
		"txn": func(w *WriteTxn) error {
			_, err := w.ExecTxn(&pb.TxnRequest{Success: []*pb.RequestOp{put("a", 0), put("k", 8)}})
			return err
		},
		"nested txn": func(w *WriteTxn) error {
			_, err := w.ExecTxn(&pb.TxnRequest{Success: []*pb.RequestOp{put("a", 7),
				{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Success: []*pb.RequestOp{put("k", 8)}}}}}})
			return err
		},
	} {
		if err := write(f); !errors.Is(err, errNoLease) || s.Rev() != 1 {
			t.Errorf("%s to a refused lease: %v, rev %d; want its error and nothing written", name, err, s.Rev())
		}
	}
	asked = nil
	if err := write(func(w *WriteTxn) error {
		_, err := w.ExecTxn(&pb.TxnRequest{Compare: never, Success: []*pb.RequestOp{put("k", 8)}, Failure: []*pb.RequestOp{put("k", 7)}})
		return err
	}); err != nil || slices.Contains(asked, 8) || !slices.Contains(asked, 7) {
		t.Errorf("txn with the refused lease in the branch not taken: %v, leases asked about %v; want success, only 7", err, asked)
	}
	asked = nil
	if err := write(func(w *WriteTxn) error {
		_, err := w.ExecPut(&pb.PutRequest{Key: []byte("k"), Value: []byte("w"), IgnoreLease: true})
		return err
	}); err != nil || len(asked) != 0 {
		t.Errorf("put keeping the key's lease: %v, leases asked about %v; want success, none", err, asked)
	}
	resp, err := s.Range(&pb.RangeRequest{Key: []byte("k")})
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease != 7 || string(resp.Kvs[0].Value) != "w" {
		t.Errorf("k: %v, %v; want value w on lease 7", resp, err)
	}
}

// The hashes of the last 10 compactions are kept, as etcd 3.7.3 keeps
// them: after `put z 1` ... `put z 14` and compactions at 2..12, HashKV(2)
// is compacted, HashKV(3) and HashKV(12) are the hashes from their
// compactions. The values are etcd's for the same requests.
func TestHashKVKeepsTenCompactionHashes(t *testing.T) {
	s := openTestStore(t)
	for i := 1; i <= 14; i++ {
		mustPut(t, s, "z", fmt.Sprint(i))
	}
	for rev := int64(2); rev <= 12; rev++ {
		done, err := s.Compact(rev)
		if err != nil {
			t.Fatal(err)
		}
		<-done
	}
	if h, err := s.HashKV(2); !errors.Is(err, ErrCompacted) {
		t.Errorf("HashKV(2) after 11 compactions: %+v, %v; want ErrCompacted", h, err)
	}
	for _, want := range []KVHash{{Hash: 3407304123, HashRevision: 3, CompactRevision: 2}, {Hash: 665430723, HashRevision: 12, CompactRevision: 11}} {
		if h, err := s.HashKV(want.HashRevision); err != nil || h != want {
			t.Errorf("HashKV(%d): %+v, %v; want etcd's %+v", want.HashRevision, h, err, want)
		}
	}
}

// TestLeasesAfterReopen: the lease index rebuilt from the file attaches
// each live key to the lease of its latest put, and nothing else.
func TestLeasesAfterReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openStoreAt(t, path)
	put := func(k string, lease int64) {
		t.Helper()
		if _, err := s.Put(&pb.PutRequest{Key: []byte(k), Value: []byte("v"), Lease: lease}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(k string) {
		t.Helper()
		if _, err := s.DeleteRange(&pb.DeleteRangeRequest{Key: []byte(k)}); err != nil {
			t.Fatal(err)
		}
	}
	put("kept", 5)
	put("moved", 5)
	put("moved", 6)
	put("dropped", 6)
	put("dropped", 0)
	put("deleted", 5)
	del("deleted")
	put("recreated", 5)
	del("recreated")
	put("recreated", 7)
	put("plain", 0)
	want := map[int64][]string{5: {"kept"}, 6: {"moved"}, 7: {"recreated"}}
	check := func(when string, s *Store) {
		t.Helper()
		for lease, keys := range want {
			if got := s.leases.keysOf(lease); !slices.Equal(got, keys) {
				t.Errorf("%s: lease %d has %q, want %q", when, lease, got, keys)
			}
		}
		if n := len(s.leases.leased); n != 3 {
			t.Errorf("%s: %d keys leased, want 3", when, n)
		}
	}
	check("before", s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check("after a reopen", openStoreAt(t, path))
}
