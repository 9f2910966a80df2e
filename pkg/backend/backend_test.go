package backend

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// testBucket is the bucket the tests write to.
var testBucket = []byte("key")

func openTestBackend(t *testing.T, cfg Config) *Backend {
	t.Helper()
	cfg.Path = filepath.Join(t.TempDir(), "db")
	b, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	w := b.Write()
	err = w.CreateBucket(testBucket)
	if uerr := w.Unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func put(t *testing.T, b *Backend, key string) {
	t.Helper()
	w := b.Write()
	err := w.Put(testBucket, []byte(key), []byte("v-"+key))
	if uerr := w.Unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		t.Error(err)
	}
}

// TestWritersDoNotWaitForACommit holds the file while a commit runs (as a
// slow disk would): writers must carry on into the next batch, and both
// batches must reach the file.
func TestWritersDoNotWaitForACommit(t *testing.T) {
	b := openTestBackend(t, Config{BatchInterval: time.Hour, BatchLimit: 1 << 30})
	put(t, b, "a")
	b.dbMu.Lock() // the commit below cannot write to the file until released
	committed := make(chan error, 1)
	go func() { committed <- b.ForceCommit() }()
	for flushing := false; !flushing; { // wait for the commit to take the batch
		b.bufMu.RLock()
		flushing = b.flushing != nil
		b.bufMu.RUnlock()
		runtime.Gosched()
	}
	wrote := make(chan struct{})
	go func() { put(t, b, "b"); close(wrote) }()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("a write waited for the commit")
	}
	b.dbMu.Unlock()
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	if err := b.ForceCommit(); err != nil {
		t.Fatal(err)
	}
	r := b.Read()
	defer r.Close()
	for _, k := range []string{"a", "b"} {
		if r.tx.Bucket(testBucket).Get([]byte(k)) == nil {
			t.Errorf("%s is not in the file", k)
		}
	}
}

// TestWritesStayVisibleAcrossCommits writes while commits run every
// millisecond and readers check that nothing once written is ever missing,
// by Get or by Range, whichever buffer or the file holds it.
func TestWritesStayVisibleAcrossCommits(t *testing.T) {
	b := openTestBackend(t, Config{BatchInterval: time.Millisecond, BatchLimit: 7})
	const keys = 3000
	key := func(i int64) string { return fmt.Sprintf("k%06d", i) }
	var written atomic.Int64 // keys [0, written) are written
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := written.Load()
				r := b.Read()
				if n > 0 {
					if _, ok := r.Get(testBucket, []byte(key(n-1))); !ok {
						t.Errorf("%s, written, is not found", key(n-1))
					}
				}
				seen := int64(0)
				r.Range(testBucket, []byte(key(0)), []byte(key(n)), func(k, v []byte) bool {
					if string(k) != key(seen) || string(v) != "v-"+string(k) {
						t.Errorf("range: %s=%s where %s was expected", k, v, key(seen))
						return false
					}
					seen++
					return true
				})
				r.Close()
				if seen != n {
					t.Errorf("range saw %d of the %d keys written", seen, n)
				}
				if t.Failed() {
					return
				}
			}
		}()
	}
	for i := int64(0); i < keys && !t.Failed(); i++ {
		put(t, b, key(i))
		written.Store(i + 1)
	}
	close(stop)
	wg.Wait()
}

// TestBackendFreelistType: the freelist is bbolt's map unless "array" is
// asked for (etcd's --backend-bbolt-freelist-type), also after a defrag.
func TestBackendFreelistType(t *testing.T) {
	for typ, want := range map[string]bolt.FreelistType{"": bolt.FreelistMapType, "map": bolt.FreelistMapType, "array": bolt.FreelistArrayType} {
		b := openTestBackend(t, Config{FreelistType: typ})
		if b.db.FreelistType != want {
			t.Errorf("%q: freelist %q, want %q", typ, b.db.FreelistType, want)
		}
		if err := b.Defrag(); err != nil {
			t.Fatal(err)
		}
		if b.db.FreelistType != want {
			t.Errorf("%q after defrag: freelist %q, want %q", typ, b.db.FreelistType, want)
		}
	}
}

// TestReadsSeeUncommittedWrites: a write is read from the write buffer
// until its batch commits, then from the file.
func TestReadsSeeUncommittedWrites(t *testing.T) {
	b := openTestBackend(t, Config{BatchInterval: time.Hour, BatchLimit: 1 << 30})
	if err := b.ForceCommit(); err != nil { // the bucket, into the file
		t.Fatal(err)
	}
	put(t, b, "k")
	where := func() (buffered, inFile bool) {
		r := b.Read()
		defer r.Close()
		_, buffered = r.open.get(testBucket, []byte("k"))
		return buffered, r.tx.Bucket(testBucket).Get([]byte("k")) != nil
	}
	if buffered, inFile := where(); !buffered || inFile {
		t.Errorf("before the commit: in the write buffer %v, in the file %v", buffered, inFile)
	}
	if err := b.ForceCommit(); err != nil {
		t.Fatal(err)
	}
	if buffered, inFile := where(); buffered || !inFile {
		t.Errorf("after the commit: in the write buffer %v, in the file %v", buffered, inFile)
	}
}
