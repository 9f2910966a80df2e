package store

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// openFixture opens a copy of the db written by real etcd 3.7.3.
func openFixture(t *testing.T) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db")
	copyFile(t, fixturePath("data", "member", "snap", "db"), path)
	return openStoreAt(t, path)
}

type jsonKV struct {
	Key            []byte `json:"key"`
	CreateRevision int64  `json:"create_revision"`
	ModRevision    int64  `json:"mod_revision"`
	Version        int64  `json:"version"`
	Value          []byte `json:"value"`
	Lease          int64  `json:"lease"`
}

func TestFixtureGetAll(t *testing.T) {
	var want struct {
		Header struct {
			Revision int64 `json:"revision"`
		} `json:"header"`
		Kvs   []jsonKV `json:"kvs"`
		Count int64    `json:"count"`
	}
	data, err := os.ReadFile(fixturePath("expected-get.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	s := openFixture(t)
	resp, err := s.Range(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Revision != want.Header.Revision || resp.Count != want.Count {
		t.Fatalf("revision %d count %d, want %d and %d", resp.Header.Revision, resp.Count, want.Header.Revision, want.Count)
	}
	if len(resp.Kvs) != len(want.Kvs) {
		t.Fatalf("got %d kvs, want %d", len(resp.Kvs), len(want.Kvs))
	}
	for i, kv := range resp.Kvs {
		got := jsonKV{kv.Key, kv.CreateRevision, kv.ModRevision, kv.Version, kv.Value, kv.Lease}
		w := want.Kvs[i]
		if string(got.Key) != string(w.Key) || string(got.Value) != string(w.Value) || got.CreateRevision != w.CreateRevision ||
			got.ModRevision != w.ModRevision || got.Version != w.Version || got.Lease != w.Lease {
			t.Errorf("kv %d: got %+v, want %+v", i, got, w)
		}
	}
}

func TestFixtureHistoricalReads(t *testing.T) {
	s := openFixture(t)
	if got := s.CompactRev(); got != 10 {
		t.Fatalf("compact revision %d, want 10", got)
	}
	// At revision 30, /app/config/1..23 exist (puts at 8..30) and counter does not.
	resp, err := s.Range(&pb.RangeRequest{Key: []byte("/app/config/"), RangeEnd: []byte("/app/config0"), Revision: 30})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 23 {
		t.Errorf("keys under /app/config/ at 30: %d, want 23", resp.Count)
	}
	resp, err = s.Range(&pb.RangeRequest{Key: []byte("counter"), Revision: 30})
	if err != nil || len(resp.Kvs) != 0 {
		t.Errorf("counter at 30: %v %v, want absent", resp, err)
	}
	resp, err = s.Range(&pb.RangeRequest{Key: []byte("counter"), Revision: 50})
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "8" || resp.Kvs[0].Version != 8 {
		t.Errorf("counter at 50: %v %v, want value 8 version 8", resp, err)
	}
	// At the compaction revision itself foo's latest value before it is kept.
	resp, err = s.Range(&pb.RangeRequest{Key: []byte("foo"), Revision: 10})
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "reborn" {
		t.Errorf("foo at 10: %v %v, want reborn", resp, err)
	}
	if _, err := s.Range(&pb.RangeRequest{Key: []byte("foo"), Revision: 9}); !errors.Is(err, ErrCompacted) {
		t.Errorf("read at 9: %v, want ErrCompacted", err)
	}
	if _, err := s.Range(&pb.RangeRequest{Key: []byte("foo"), Revision: 64}); !errors.Is(err, ErrFutureRev) {
		t.Errorf("read at 64: %v, want ErrFutureRev", err)
	}
}

func TestFixtureHashKV(t *testing.T) {
	f, err := os.Open(fixturePath("hashkv.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := openFixture(t)
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var want struct {
			Hash            uint32 `json:"hash"`
			HashRevision    int64  `json:"hashRevision"`
			CompactRevision int64  `json:"compactRevision"`
		}
		if err := json.Unmarshal(sc.Bytes(), &want); err != nil {
			t.Fatal(err)
		}
		got, err := s.HashKV(want.HashRevision)
		if err != nil {
			t.Fatal(err)
		}
		if got.Hash != want.Hash || got.HashRevision != want.HashRevision || got.CompactRevision != want.CompactRevision {
			t.Errorf("HashKV(%d) = %+v, want %+v", want.HashRevision, got, want)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("read %d expectations from hashkv.jsonl, want 2", n)
	}
}

func TestFixtureLeasesAndMeta(t *testing.T) {
	s := openFixture(t)
	leases, err := s.Leases()
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != 1 || leases[0].ID != 0x78c2a2281687072b || leases[0].TTL != 600 {
		t.Fatalf("leases %+v, want one lease 78c2a2281687072b with TTL 600", leases)
	}
	if keys := s.LeaseKeys(leases[0].ID); len(keys) != 1 || keys[0] != "leased-key" {
		t.Errorf("keys of the lease: %q, want [leased-key]", keys)
	}
	if ci, term := s.ConsistentIndex(); ci != 81 || term != 2 {
		t.Errorf("consistent index %d term %d, want 81 and 2", ci, term)
	}
}
