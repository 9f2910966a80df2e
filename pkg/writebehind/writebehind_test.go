package writebehind

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// recordingFile counts what is written and what each sync covered; its
// syncs are slow, as a disk's under load are.
type recordingFile struct {
	mu        sync.Mutex
	written   int
	synced    int // bytes written when the last sync ended
	syncs     int
	syncDelay time.Duration
	syncErr   error
}

func (f *recordingFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.written += len(p)
	return len(p), nil
}

func (f *recordingFile) Sync() error {
	f.mu.Lock()
	covered := f.written
	f.mu.Unlock()
	time.Sleep(f.syncDelay)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.synced, f.syncs = covered, f.syncs+1
	return f.syncErr
}

func (f *recordingFile) state() (written, synced, syncs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.written, f.synced, f.syncs
}

// TestUnsyncedStaysBounded: however the writes are cut, and however slow
// the syncs, a write returns with at most two intervals not yet synced
// (the one being filled, and the one whose sync runs), each overshot by
// the write that ended it at most, and Close leaves nothing unsynced.
func TestUnsyncedStaysBounded(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	const interval = 64 << 10
	f := &recordingFile{syncDelay: time.Millisecond}
	w := New(f, interval, false)
	buf := make([]byte, 3*interval)
	for range 400 {
		p := buf[:r.IntN(len(buf))+1]
		if _, err := w.Write(p); err != nil {
			t.Fatal(err)
		}
		if written, synced, _ := f.state(); written-synced > 2*(interval+len(buf)) {
			t.Fatalf("seed %d: %d bytes written, %d synced: more than two intervals of %d, each with a write of up to %d, behind",
				seed, written, synced, interval, len(buf))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	written, synced, syncs := f.state()
	if written != synced {
		t.Errorf("seed %d: after Close %d bytes written, %d synced", seed, written, synced)
	}
	if min := written / (interval + len(buf)); syncs < min {
		t.Errorf("seed %d: %d syncs for %d bytes, want at least %d", seed, syncs, written, min)
	}
}

// TestCloseReturnsTheSyncError: a sync that fails beside the writes is
// the error of Close, and of a second Close, which syncs nothing more.
func TestCloseReturnsTheSyncError(t *testing.T) {
	failed := errors.New("input/output error")
	f := &recordingFile{syncErr: failed}
	w := New(f, 8, false)
	for range 4 {
		if _, err := w.Write(make([]byte, 8)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); !errors.Is(err, failed) {
		t.Fatalf("Close: %v, want %v", err, failed)
	}
	_, _, syncs := f.state()
	if err := w.Close(); !errors.Is(err, failed) {
		t.Errorf("second Close: %v, want %v", err, failed)
	}
	if _, _, again := f.state(); again != syncs {
		t.Errorf("the second Close synced again (%d syncs, then %d)", syncs, again)
	}
}

// TestShareDiskLeavesTheDiskIdle: with shareDisk, each sync is followed by
// as long without one, so the writes that wait for syncs take at least
// twice the syncs' time.
func TestShareDiskLeavesTheDiskIdle(t *testing.T) {
	const delay = 5 * time.Millisecond
	for _, share := range []bool{false, true} {
		f := &recordingFile{syncDelay: delay}
		w := New(f, 1, share)
		start := time.Now()
		for range 10 {
			if _, err := w.Write([]byte{0}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if share && took < 2*10*delay {
			t.Errorf("shareDisk: 10 syncs of %s took %s in all, want at least %s", delay, took, 2*10*delay)
		}
		if !share && took >= 2*10*delay {
			t.Errorf("without shareDisk: 10 syncs of %s took %s in all, want less than %s", delay, took, 2*10*delay)
		}
	}
}
