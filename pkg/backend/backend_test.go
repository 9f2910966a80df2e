package backend

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
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

// TestDefragFreesTheReplacedFile: after a defragmentation the replaced
// file, which no name refers to, is truncated to nothing and closed, a
// slice at a time (releaseFile), rather than left to bbolt's close to free
// at once. Linux only: the file is found through /proc/self/fd.
func TestDefragFreesTheReplacedFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds open files through /proc/self/fd")
	}
	b := openTestBackend(t, Config{})
	value := make([]byte, 4096)
	w := b.Write()
	for i := range 20000 { // some 90 MB, freed in 6 slices
		if err := w.Put(testBucket, fmt.Appendf(nil, "k%06d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := b.ForceCommit(); err != nil {
		t.Fatal(err)
	}
	if err := b.Defrag(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := deletedFilesOpen(t, b.cfg.Path)
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d handles on the replaced file still open", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The new file answers.
	r := b.Read()
	defer r.Close()
	if v, ok := r.Get(testBucket, []byte("k019999")); !ok || len(v) != len(value) {
		t.Fatalf("k019999 after the defrag: %d bytes, found %v", len(v), ok)
	}
}

// deletedFilesOpen counts this process's open files that were at path and
// have no name any more.
func deletedFilesOpen(t *testing.T, path string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == path+" (deleted)" {
			n++
		}
	}
	return n
}

// TestReleaseFileFreesASliceAtATime: releaseFile shrinks the file by
// releaseStep at a time, then closes it.
func TestReleaseFileFreesASliceAtATime(t *testing.T) {
	b := openTestBackend(t, Config{})
	path := filepath.Join(t.TempDir(), "replaced")
	const size = 5*releaseStep + 1
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	watch, err := os.Open(path) // a second handle, to see the sizes by
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	done := make(chan struct{})
	go func() { b.releaseFile(f); close(done) }()
	seen := map[int64]bool{}
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		fi, err := watch.Stat()
		if err != nil {
			t.Fatal(err)
		}
		seen[fi.Size()] = true
		time.Sleep(time.Millisecond) // sampling, not waiting for a condition
	}
	if !seen[0] {
		t.Errorf("the file was not emptied: sizes %v", seen)
	}
	steps := 0
	for s := range seen {
		if s > 0 && s < size {
			steps++
			if (size-s)%releaseStep != 0 {
				t.Errorf("size %d is not a whole number of steps below %d", s, size)
			}
		}
	}
	if steps < 3 {
		t.Errorf("freed in too few steps: sizes %v", seen)
	}
	if err := f.Close(); err == nil {
		t.Error("releaseFile left the file open")
	}
}

// A commit for a raft snapshot does not wait for another commit: it
// returns at once, and the snapshot waits for a later entry (the apply
// loop that asks for it would hold every write as long), unless the
// snapshot is overdue: then it waits for that commit, and commits.
func TestCommitUnlessBusyDoesNotWait(t *testing.T) {
	b := openTestBackend(t, Config{})
	put(t, b, "a")
	commit := func(overdue bool) <-chan bool {
		done := make(chan bool, 1)
		go func() {
			committed, err := b.CommitUnlessBusy(overdue)
			if err != nil {
				t.Error(err)
			}
			done <- committed
		}()
		return done
	}
	b.commitMu.Lock() // a commit, or a defragmentation, under way
	select {
	case committed := <-commit(false):
		if committed {
			t.Error("committed while another commit held the file")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("CommitUnlessBusy waited for the commit under way")
	}
	overdue := commit(true)
	b.commitMu.Unlock()
	if committed := <-overdue; !committed {
		t.Fatal("an overdue snapshot's commit did not commit once the file was free")
	}
	if committed, err := b.CommitUnlessBusy(false); err != nil || !committed {
		t.Fatalf("with the file free: committed %v, %v", committed, err)
	}
}

// TestCleanCloseWritesTheFreelist: a clean close leaves bbolt's list of
// free pages in the file, so that the next open reads it instead of
// walking the file; the commits in between leave it out as before.
func TestCleanCloseWritesTheFreelist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	b, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	w := b.Write()
	if err := w.CreateBucket(testBucket); err != nil {
		t.Fatal(err)
	}
	w.Unlock()
	for i := range 1000 {
		put(t, b, fmt.Sprintf("k%04d", i))
	}
	if err := b.ForceCommit(); err != nil {
		t.Fatal(err)
	}
	if fl := newestFreelistPage(t, path); fl != noFreelist {
		t.Fatalf("a commit wrote the freelist (page %d)", fl)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if fl := newestFreelistPage(t, path); fl == noFreelist {
		t.Fatal("a clean close left the freelist out")
	}

	b, err = Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	put(t, b, "after")
	if err := b.ForceCommit(); err != nil {
		t.Fatal(err)
	}
	if fl := newestFreelistPage(t, path); fl != noFreelist {
		t.Fatalf("a commit after the reopen wrote the freelist (page %d)", fl)
	}
	rt := b.Read()
	defer rt.Close()
	if v, ok := rt.Get(testBucket, []byte("k0999")); !ok || string(v) != "v-k0999" {
		t.Fatalf("k0999 after the reopen: %q, %v", v, ok)
	}
}

// TestCloseWithoutWritesLeavesTheFileAlone: a file opened and closed with
// nothing written is not touched, the freelist included (a file the store
// refuses must stay as it was).
func TestCloseWithoutWritesLeavesTheFileAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	b, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	w := b.Write()
	if err := w.CreateBucket(testBucket); err != nil {
		t.Fatal(err)
	}
	w.Unlock()
	put(t, b, "a")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err = Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("a close with nothing written changed the file")
	}
}

// noFreelist is the freelist page of a bbolt meta page whose transaction
// did not write the list.
const noFreelist = ^uint64(0)

// newestFreelistPage reads the freelist page named by the newest of the
// file's two meta pages (a 16-byte page header, then magic, version, page
// size, flags, the root bucket's 16 bytes, the freelist page, the page
// count and the transaction id, little-endian).
func newestFreelistPage(t *testing.T, path string) uint64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	pageSize := int(le.Uint32(data[16+8:]))
	var freelist, txid uint64
	for _, at := range []int{0, pageSize} {
		meta := data[at+16:]
		if id := le.Uint64(meta[48:]); id >= txid {
			freelist, txid = le.Uint64(meta[32:]), id
		}
	}
	return freelist
}
