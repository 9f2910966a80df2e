package auth

import (
	"bytes"
	"maps"
	"slices"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/protobuf/proto"
)

// memDB is an in-memory stand-in for the db's buckets, both Reader and
// Writer.
type memDB map[string]map[string][]byte

func (m memDB) Get(bucket, key []byte) ([]byte, bool) {
	v, ok := m[string(bucket)][string(key)]
	return v, ok
}

func (m memDB) Range(bucket, start, end []byte, fn func(k, v []byte) bool) error {
	b := m[string(bucket)]
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if bytes.Compare([]byte(k), start) < 0 || (end != nil && bytes.Compare([]byte(k), end) >= 0) {
			continue
		}
		if !fn([]byte(k), b[k]) {
			break
		}
	}
	return nil
}

func (m memDB) Put(bucket, key, value []byte) error {
	if m[string(bucket)] == nil {
		m[string(bucket)] = map[string][]byte{}
	}
	m[string(bucket)][string(key)] = slices.Clone(value)
	return nil
}

func (m memDB) Delete(bucket, key []byte) error {
	delete(m[string(bucket)], string(key))
	return nil
}

// fakeClock is a settable clock for token expiry.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

// fastHasher keeps unit tests quick; the real hasher has its own tests.
var fastHasher = BcryptHasher{Cost: bcrypt.MinCost}

// testStore is a store with simple tokens on an initialised memDB.
func testStore(t *testing.T) (*Store, memDB, *fakeClock) {
	t.Helper()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	s, db := testStoreWith(t, newSimpleTokens(time.Minute, clock.Now))
	return s, db, clock
}

// testStoreWith is a store with the given tokens on an initialised memDB.
func testStoreWith(t *testing.T, tokens TokenProvider) (*Store, memDB) {
	t.Helper()
	db := memDB{}
	if err := Init(db, db); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Hasher: fastHasher, Tokens: tokens})
	if err := s.Load(db); err != nil {
		t.Fatal(err)
	}
	return s, db
}

// apply applies req as info at index and fails the test on an error.
func apply(t *testing.T, s *Store, db memDB, info Info, req *pb.InternalRaftRequest) proto.Message {
	t.Helper()
	resp, err := s.Apply(db, req, 100, info)
	if err != nil {
		t.Fatalf("apply %v: %v", req, err)
	}
	return resp
}
