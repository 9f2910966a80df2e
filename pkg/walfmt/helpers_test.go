package walfmt

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// fixtureWAL is the only segment of the WAL written by a real etcd 3.7.3
// (a copy of the repository's testdata/etcd-3.7.3/data/member/wal).
const fixtureWAL = "testdata/0000000000000000-0000000000000000.wal"

// copyFixture copies the fixture WAL into a fresh directory and returns it.
func copyFixture(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(fixtureWAL)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(fixtureWAL)), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func testMetadata() *etcdserverpb.Metadata {
	return &etcdserverpb.Metadata{NodeID: proto.Uint64(0x1f4d227d440d78c2), ClusterID: proto.Uint64(42)}
}

func entry(term, index uint64, data string) *raftpb.Entry {
	e := &raftpb.Entry{Term: proto.Uint64(term), Index: proto.Uint64(index)}
	if data != "" {
		e.Data = []byte(data)
	}
	return e
}

func hardState(term, vote, commit uint64) *raftpb.HardState {
	return &raftpb.HardState{Term: proto.Uint64(term), Vote: proto.Uint64(vote), Commit: proto.Uint64(commit)}
}

// decodeAll runs a decoder to the end and returns the records and the errors
// it reported, in order.
func decodeAll(t testing.TB, d *Decoder) ([]*Item, []error) {
	t.Helper()
	defer d.Close()
	var items []*Item
	var errs []error
	for i := 0; ; i++ {
		if i > 1_000_000 {
			t.Fatal("decoder does not terminate")
		}
		it, err := d.Next()
		if errors.Is(err, io.EOF) {
			return items, errs
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		items = append(items, it)
	}
}

func decodeDir(t testing.TB, dir string, opts DecoderOptions) ([]*Item, []error) {
	t.Helper()
	d, err := OpenDecoder(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return decodeAll(t, d)
}

// asWALError returns err as an *Error or fails the test.
func asWALError(t testing.TB, err error) *Error {
	t.Helper()
	var werr *Error
	if !errors.As(err, &werr) {
		t.Fatalf("error %v (%T) is not a *walfmt.Error", err, err)
	}
	return werr
}

func mustWrite(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
