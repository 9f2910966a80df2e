package store

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// TestDefragDoesNotStopWrites: while a db of more than 200 MB is
// defragmented, a writer and a reader go on, and none of their requests
// waits much longer than with no defrag (etcd holds every write for the
// whole defrag); afterwards, and after a reopen, every key and revision is
// intact, those written during the defrag included.
func TestDefragDoesNotStopWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 200 MB db")
	}
	path := filepath.Join(t.TempDir(), "db")
	s := openStoreAt(t, path)
	value := make([]byte, 4000)
	const keys = 55_000 // × 4 kB: 220 MB
	for i := 0; i < keys; i += 100 {
		var ops []*pb.RequestOp
		for j := i; j < i+100; j++ {
			ops = append(ops, &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{
				Key: fmt.Appendf(nil, "big/%06d", j), Value: value}}})
		}
		if _, err := s.Txn(&pb.TxnRequest{Success: ops}); err != nil {
			t.Fatal(err)
		}
	}
	// A quarter overwritten and compacted away: free pages to give back.
	for i := 0; i < keys/4; i++ {
		mustPut(t, s, fmt.Sprintf("big/%06d", i), "small")
	}
	done, err := s.Compact(s.Rev())
	if err != nil {
		t.Fatal(err)
	}
	<-done
	// The hash checked is of a revision after the compaction's, which
	// HashKV would answer from memory.
	mustPut(t, s, "last", "before the defrag")
	if err := s.b.ForceCommit(); err != nil {
		t.Fatal(err)
	}
	if size := s.b.Size(); size < 200<<20 {
		t.Fatalf("db of %d bytes, want at least 200 MB", size)
	}
	before, rev := s.b.Size(), s.Rev()
	hash, err := s.HashKV(rev)
	if err != nil {
		t.Fatal(err)
	}

	// A writer (one put after the other) and a reader (a key of the file),
	// first for two seconds with no defrag (about as long as the defrag
	// takes under -race), as the control: the slowest request then is what
	// the machine's load alone costs.
	var (
		stop              = make(chan struct{})
		wg                sync.WaitGroup
		mu                sync.Mutex
		defragging        atomic.Bool
		slowest           = map[bool]map[string]time.Duration{false: {}, true: {}} // by defragging
		putsDuring        atomic.Int64
		writes, reads     int // owned by the writer and the reader until wg.Wait
		writeErr, readErr error
	)
	record := func(what string, start time.Time) {
		d, during := time.Since(start), defragging.Load()
		mu.Lock()
		defer mu.Unlock()
		slowest[during][what] = max(slowest[during][what], d)
		if during && what == "put" {
			putsDuring.Add(1)
		}
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		for ; !stopped(); writes++ {
			start := time.Now()
			if _, err := s.Put(&pb.PutRequest{Key: fmt.Appendf(nil, "during/%06d", writes), Value: fmt.Appendf(nil, "%d", writes)}); err != nil {
				writeErr = err
				return
			}
			record("put", start)
		}
	}()
	go func() {
		defer wg.Done()
		for ; !stopped(); reads++ {
			start := time.Now()
			resp, err := s.Range(&pb.RangeRequest{Key: fmt.Appendf(nil, "big/%06d", keys-1-reads%1000)})
			if err == nil && len(resp.Kvs) != 1 {
				err = fmt.Errorf("read %d: %d keys", reads, len(resp.Kvs))
			}
			if err != nil {
				readErr = err
				return
			}
			record("range", start)
		}
	}()
	time.Sleep(2 * time.Second) // the control phase: a duration, nothing to wait for
	defragging.Store(true)
	start := time.Now()
	err = s.b.Defrag()
	took := time.Since(start)
	defragging.Store(false)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if writeErr != nil || readErr != nil {
		t.Fatalf("put %v, range %v", writeErr, readErr)
	}
	t.Logf("defrag of %d MB in %v (%d MB after); %d puts during it; slowest with no defrag %v, during it %v",
		before>>20, took, s.b.Size()>>20, putsDuring.Load(), slowest[false], slowest[true])
	if after := s.b.Size(); after >= before {
		t.Errorf("the file did not shrink: %d → %d bytes", before, after)
	}
	if n := putsDuring.Load(); n < 10 {
		t.Errorf("only %d puts during a defrag of %v: it held the writer back", n, took)
	}
	// etcd holds a request for the whole defrag. Here none may wait much
	// longer than the slowest of the control phase: by at most a quarter of
	// the defrag's duration (and 100 ms), the room a 2-core machine that
	// also runs other packages' tests needs for a scheduling hiccup.
	margin := max(100*time.Millisecond, took/4)
	for what, d := range slowest[true] {
		if d > slowest[false][what]+margin {
			t.Errorf("a %s waited %v during the defrag of %v, more than %v longer than the slowest with no defrag (%v)", what, d, took, margin, slowest[false][what])
		}
	}

	check := func(s *Store, when string) {
		t.Helper()
		if h, err := s.HashKV(rev); err != nil || h != hash {
			t.Errorf("%s: HashKV at %d: %+v %v, want %+v", when, rev, h, err, hash)
		}
		resp, err := s.Range(&pb.RangeRequest{Key: []byte("during/"), RangeEnd: []byte("during0")})
		if err != nil || len(resp.Kvs) != writes {
			t.Fatalf("%s: %d of the %d puts made during the defrag: %v", when, len(resp.Kvs), writes, err)
		}
		for i, kv := range resp.Kvs {
			if want := fmt.Sprint(i); string(kv.Value) != want || kv.ModRevision != rev+int64(i)+1 {
				t.Fatalf("%s: %s = %q at revision %d, want %q at %d", when, kv.Key, kv.Value, kv.ModRevision, want, rev+int64(i)+1)
			}
		}
	}
	check(s, "after the defrag")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check(openStoreAt(t, path), "reopened")
}
