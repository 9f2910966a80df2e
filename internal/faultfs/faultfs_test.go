package faultfs

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mount mounts a fresh backing directory and returns the filesystem.
func mount(t *testing.T) *FS {
	t.Helper()
	backing, dir := filepath.Join(t.TempDir(), "backing"), filepath.Join(t.TempDir(), "mnt")
	for _, d := range []string{backing, dir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return MountT(t, backing, dir)
}

// create creates name in the mount with content, synced when sync is set;
// the caller closes the file.
func create(t *testing.T, f *FS, name, content string, sync bool) *os.File {
	t.Helper()
	fh, err := os.OpenFile(filepath.Join(f.Dir, name), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fh.Close() })
	if _, err := fh.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := fh.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return fh
}

func backingContent(t *testing.T, f *FS, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.Backing, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPassThrough(t *testing.T) {
	f := mount(t)
	fh := create(t, f, "a", "hello", true)
	if got := backingContent(t, f, "a"); got != "hello" {
		t.Fatalf("backing file holds %q, want hello", got)
	}
	if err := fh.Truncate(2); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.Dir, "a")); string(got) != "he" {
		t.Fatalf("mount shows %q after truncate, want he", got)
	}
	if err := os.Rename(filepath.Join(f.Dir, "a"), filepath.Join(f.Dir, "b")); err != nil {
		t.Fatal(err)
	}
	if got := backingContent(t, f, "b"); got != "he" {
		t.Fatalf("renamed file holds %q, want he", got)
	}
}

func TestFsyncDelay(t *testing.T) {
	f := mount(t)
	fh := create(t, f, "a", "x", false)
	const delay = 300 * time.Millisecond
	f.Set(Faults{FsyncDelay: delay})
	start := time.Now()
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < delay {
		t.Fatalf("fsync took %v with a delay of %v", took, delay)
	}
	if err := syscall.Fdatasync(int(fh.Fd())); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 2*delay {
		t.Fatalf("fsync and fdatasync took %v with a delay of %v each", took, delay)
	}
	f.Set(Faults{})
	start = time.Now()
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= delay {
		t.Fatalf("fsync took %v with no delay set", took)
	}
}

func TestFsyncError(t *testing.T) {
	f := mount(t)
	fh := create(t, f, "a", "x", false)
	f.Set(Faults{FsyncErr: syscall.EIO})
	if err := fh.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync: %v, want EIO", err)
	}
	if n := f.Unsynced(); n != 1 {
		t.Fatalf("%d files unsynced after a failed fsync, want 1", n)
	}
	f.Set(Faults{})
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := f.Unsynced(); n != 0 {
		t.Fatalf("%d files unsynced after fsync, want 0", n)
	}
}

func TestWriteErrors(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.ENOSPC} {
		t.Run(errno.Error(), func(t *testing.T) {
			f := mount(t)
			fh := create(t, f, "db", "old", true)
			other := create(t, f, "wal", "", true)
			f.Set(Faults{WriteErr: errno, Only: func(p string) bool { return strings.HasSuffix(p, "db") }})
			if _, err := fh.WriteAt([]byte("new"), 0); !errors.Is(err, errno) {
				t.Fatalf("write: %v, want %v", err, errno)
			}
			if err := fh.Truncate(0); !errors.Is(err, errno) {
				t.Fatalf("truncate: %v, want %v", err, errno)
			}
			if _, err := other.WriteString("fine"); err != nil {
				t.Fatalf("write to a file the fault does not cover: %v", err)
			}
			if got := backingContent(t, f, "db"); got != "old" {
				t.Fatalf("file holds %q after failed writes, want old", got)
			}
			f.Set(Faults{})
			if _, err := fh.WriteAt([]byte("new"), 0); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestPowerLossDropsUnsynced(t *testing.T) {
	f := mount(t)
	fh := create(t, f, "a", "hello", true)
	for _, do := range []func() error{
		func() error { _, err := fh.WriteAt([]byte("J"), 0); return err },
		func() error { _, err := fh.WriteAt([]byte("world"), 10); return err }, // past the end: a hole
		func() error { return fh.Truncate(3) },
		func() error { _, err := fh.WriteAt([]byte("p!"), 3); return err },
	} {
		if err := do(); err != nil {
			t.Fatal(err)
		}
	}
	fresh := create(t, f, "new", "unsynced", false)
	// A file open for writing only, as etcd opens its WAL.
	wronly, err := os.OpenFile(filepath.Join(f.Dir, "new"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wronly.WriteAt([]byte("UN"), 0); err != nil {
		t.Fatal(err)
	}
	wronly.Close()
	if got := backingContent(t, f, "a"); got != "Jelp!" {
		t.Fatalf("before the power loss the file holds %q, want Jelp!", got)
	}
	fh.Close()
	fresh.Close()
	if err := f.PowerLoss(nil); err != nil {
		t.Fatal(err)
	}
	if got := backingContent(t, f, "a"); got != "hello" {
		t.Fatalf("after the power loss the file holds %q, want its synced hello", got)
	}
	if got, _ := os.ReadFile(filepath.Join(f.Dir, "a")); string(got) != "hello" {
		t.Fatalf("after the power loss the mount shows %q, want hello", got)
	}
	if got := backingContent(t, f, "new"); got != "" {
		t.Fatalf("a file never synced holds %q after the power loss, want nothing", got)
	}
}

// TestTornPowerLoss: appends after the last fsync survive as a prefix, in
// order, possibly cut inside a write at a sector boundary of the file;
// never anything else.
func TestTornPowerLoss(t *testing.T) {
	const synced, writeSize = "synced|", 300
	f := mount(t)
	lens := map[int]bool{}
	torn := 0
	for seed := range uint64(40) {
		name := "wal" + string(rune('a'+seed%26)) + string(rune('a'+seed/26))
		fh := create(t, f, name, synced, true)
		var all bytes.Buffer
		for i := range 5 {
			rec := bytes.Repeat([]byte{byte('0' + i)}, writeSize)
			all.Write(rec)
			if _, err := fh.Write(rec); err != nil {
				t.Fatal(err)
			}
		}
		fh.Close()
		if err := f.PowerLoss(rand.New(rand.NewPCG(seed, 1))); err != nil {
			t.Fatal(err)
		}
		got := backingContent(t, f, name)
		tail, ok := strings.CutPrefix(got, synced)
		if !ok || !strings.HasPrefix(all.String(), tail) {
			t.Fatalf("seed %d: after a torn power loss the file holds %q: not the synced content and a prefix of %q", seed, got, all.String())
		}
		switch {
		case len(tail)%writeSize == 0:
		case len(got)%512 == 0:
			torn++
		default:
			t.Fatalf("seed %d: a write cut at file offset %d, not at a sector boundary", seed, len(got))
		}
		lens[len(tail)] = true
	}
	if len(lens) < 5 || torn == 0 {
		t.Fatalf("40 torn power losses kept only %d distinct lengths of the unsynced tail, %d of them a torn write", len(lens), torn)
	}
}

// TestStats: each failed fsync and write is counted, and so is each
// delayed fsync, which is Stalled until its delay is over.
func TestStats(t *testing.T) {
	f := mount(t)
	fh := create(t, f, "a", "x", false)
	f.Set(Faults{FsyncErr: syscall.EIO, WriteErr: syscall.ENOSPC})
	if err := fh.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync: %v, want EIO", err)
	}
	if _, err := fh.WriteAt([]byte("y"), 0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write: %v, want ENOSPC", err)
	}
	if err := fh.Truncate(0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("truncate: %v, want ENOSPC", err)
	}
	if s := f.Stats(); s != (Stats{FailedFsyncs: 1, FailedWrites: 2}) {
		t.Fatalf("stats after one failed fsync and two failed writes: %+v", s)
	}

	const delay = time.Second
	f.Set(Faults{FsyncDelay: delay})
	synced := make(chan error, 1)
	go func() { synced <- fh.Sync() }()
	deadline := time.Now().Add(delay / 2)
	for f.Stats().Stalled != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("no fsync stalled %v after one began with a delay of %v: %+v", delay/2, delay, f.Stats())
		}
		time.Sleep(10 * time.Millisecond) // polling a condition
	}
	f.Set(Faults{}) // the fsync in its delay keeps it
	if s := f.Stats(); s.Stalled != 1 {
		t.Fatalf("clearing the delay ended the stall at once: %+v", s)
	}
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s != (Stats{FailedFsyncs: 1, FailedWrites: 2, DelayedFsyncs: 1}) {
		t.Fatalf("stats once the delayed fsync returned: %+v", s)
	}
}
