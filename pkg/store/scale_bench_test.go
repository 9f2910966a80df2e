package store

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/keyindex"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// The benchmarks of ranges over a large keyspace share one store of
// scaleKeys keys of 256 bytes ("key-0000000", "key-0000001", ...), built
// once per test binary. The keys are written in a scattered order
// (scatteredKeys), so that the revisions of neighbouring keys lie far
// apart in the file, as they do in a cluster whose keys were written over
// time (and in etcd's benchmark, whose keys are varints).
const scaleKeys = 1000000

var scale struct {
	once sync.Once
	dir  string
	s    *Store
	err  error
}

// TestMain removes the shared store of the scale benchmarks, if one was
// built, once every test and benchmark has run.
func TestMain(m *testing.M) {
	code := m.Run()
	if scale.s != nil {
		scale.s.Close()
	}
	if scale.dir != "" {
		os.RemoveAll(scale.dir)
	}
	os.Exit(code)
}

// scaleStore returns the shared store of scaleKeys keys, committed to bbolt.
func scaleStore(b *testing.B) *Store {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	scale.once.Do(func() {
		scale.dir, scale.err = os.MkdirTemp("", "cairn-store-scale-")
		if scale.err != nil {
			return
		}
		s, err := Open(Config{Backend: backend.Config{Path: filepath.Join(scale.dir, "db"), BatchLimit: 100000}})
		if err != nil {
			scale.err = err
			return
		}
		if scale.err = loadKeys(s, scaleKeys, 10000, scatteredKeys); scale.err == nil {
			scale.err = s.Backend().ForceCommit()
		}
		scale.s = s
	})
	if scale.err != nil {
		b.Fatal(scale.err)
	}
	return scale.s
}

// loadKeys puts the n keys "key-0000000" to "key-<n-1>" of 256 bytes into
// s, perTxn of them in each write transaction; the i-th key put is the one
// numbered order(i, n).
func loadKeys(s *Store, n, perTxn int, order func(i, n int) int) error {
	for i := 0; i < n; i += perTxn {
		w := s.Write()
		for j := i; j < min(i+perTxn, n); j++ {
			if _, err := w.Put(fmt.Appendf(nil, "key-%07d", order(j, n)), benchValue, 0); err != nil {
				w.End()
				return err
			}
		}
		if err := w.End(); err != nil {
			return err
		}
	}
	return nil
}

// sequentialKeys puts the keys in their order.
func sequentialKeys(i, _ int) int { return i }

// scatteredKeys puts the keys in the order of a stride of 7919, a prime
// that does not divide n (a power of ten): every key once, and
// neighbouring keys 7919⁻¹ mod n puts apart.
func scatteredKeys(i, n int) int { return i * 7919 % n }

// BenchmarkScaleCountAll counts every key of the 1M-key store.
func BenchmarkScaleCountAll(b *testing.B) {
	s := scaleStore(b)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := s.Range(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}, CountOnly: true})
		if err != nil || resp.Count != scaleKeys {
			b.Fatal(resp.GetCount(), err)
		}
	}
}

// BenchmarkScaleKeysOnly10k reads the keys of a 10,000-key prefix of the
// 1M-key store, without their values.
func BenchmarkScaleKeysOnly10k(b *testing.B) {
	benchScalePrefix(b, true)
}

// BenchmarkScaleRange10k reads the keys and values of a 10,000-key prefix
// of the 1M-key store.
func BenchmarkScaleRange10k(b *testing.B) {
	benchScalePrefix(b, false)
}

func benchScalePrefix(b *testing.B, keysOnly bool) {
	s := scaleStore(b)
	req := &pb.RangeRequest{Key: []byte("key-001"), RangeEnd: []byte("key-002"), KeysOnly: keysOnly}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := s.Range(req)
		if err != nil || len(resp.Kvs) != 10000 {
			b.Fatal(len(resp.GetKvs()), err)
		}
	}
}

// BenchmarkScaleWire10k* give a 10,000-key prefix of the 1M-key store in
// the bytes a gRPC answer carries: Range and then proto.Marshal (what the
// gRPC codec does with a decoded answer), or RangeEncoded.
func BenchmarkScaleWire10kDecoded(b *testing.B)         { benchScaleWire(b, false, false) }
func BenchmarkScaleWire10kEncoded(b *testing.B)         { benchScaleWire(b, false, true) }
func BenchmarkScaleWire10kKeysOnlyDecoded(b *testing.B) { benchScaleWire(b, true, false) }
func BenchmarkScaleWire10kKeysOnlyEncoded(b *testing.B) { benchScaleWire(b, true, true) }

func benchScaleWire(b *testing.B, keysOnly, encoded bool) {
	s := scaleStore(b)
	req := &pb.RangeRequest{Key: []byte("key-001"), RangeEnd: []byte("key-002"), KeysOnly: keysOnly}
	b.ReportAllocs()
	for b.Loop() {
		var out []byte
		var err error
		if encoded {
			out, _, err = s.RangeEncoded(req, nil)
		} else {
			var resp *pb.RangeResponse
			if resp, err = s.Range(req); err == nil {
				out, err = proto.Marshal(resp)
			}
		}
		if err != nil || len(out) < 10000*len("key-0010000") {
			b.Fatal(len(out), err)
		}
	}
}

// BenchmarkScaleRebuild rebuilds the key index of the 1M-key store from its
// bbolt file, as Open does at a restart (the file is open already).
func BenchmarkScaleRebuild(b *testing.B) {
	s := scaleStore(b)
	b.ReportAllocs()
	for b.Loop() {
		fresh := &Store{b: s.b, index: keyindex.New(), leases: newLeaseIndex()}
		if err := fresh.rebuild(); err != nil {
			b.Fatal(err)
		}
		if n := fresh.keys.Load(); n != scaleKeys {
			b.Fatalf("%d keys rebuilt", n)
		}
	}
}
