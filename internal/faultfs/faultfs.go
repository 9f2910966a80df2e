// Package faultfs is test support: a loopback FUSE filesystem, mounted
// over a directory, that passes every operation through to a backing
// directory and injects disk faults that the test switches on and off at
// run time: a delay on every fsync/fdatasync (a stalled disk), fsync or
// write errors (EIO, ENOSPC), and power loss (LazyFS-like: the writes not
// yet synced are dropped, or a torn prefix of them kept).
//
// Power loss is tracked per file with an undo log: the first change to a
// file after its last fsync starts the log, each write, truncate or
// allocate records the bytes and size it replaces, an fsync of the file
// forgets the log, and PowerLoss plays the logs back. Directory entries are
// not tracked: a file created since the last sync survives a power loss,
// emptied. A truncate by path (not through an open file) is not tracked.
package faultfs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Faults are the faults in force; the zero value passes everything through.
type Faults struct {
	// FsyncDelay delays every fsync and fdatasync of a file.
	FsyncDelay time.Duration
	// FsyncErr, when not 0, fails every fsync with it (after FsyncDelay);
	// the data stays unsynced.
	FsyncErr syscall.Errno
	// WriteErr, when not 0, fails every write, truncate and allocate with
	// it (syscall.EIO, syscall.ENOSPC), changing nothing.
	WriteErr syscall.Errno
	// Only, when not nil, limits the faults to the files whose path
	// (relative to the mount, as opened) it accepts.
	Only func(path string) bool
}

// FS is a mounted fault-injecting filesystem.
type FS struct {
	// Dir is the mount point; Backing the directory it shows.
	Dir, Backing string

	server *fuse.Server

	mu     sync.Mutex
	faults Faults
	dirty  map[uint64]*undoLog // by backing inode: the files changed since their last fsync
	stats  Stats
}

// Stats counts what the faults have done since the mount: a test tells
// from them whether its process met the fault at all (no fsync during an
// fsync fault), and when a stall is over (an fsync delayed just before
// the delay was cleared still waits all of it).
type Stats struct {
	FailedFsyncs  int // fsyncs failed with FsyncErr
	FailedWrites  int // writes, truncates and allocates failed with WriteErr
	DelayedFsyncs int // fsyncs delayed by FsyncDelay
	Stalled       int // fsyncs in their delay now
}

// undoLog records how to take a file back to its content at its last fsync.
type undoLog struct {
	fd   int // our descriptor of the file, to close
	recs []undoRec
}

// undoRec undoes one change: write old back at off, then cut the file to
// size. n is the length a write wrote at off, which a torn write keeps a
// part of (0 for a truncate or an allocate, which are not torn).
type undoRec struct {
	off, size, n int64
	old          []byte
}

// Mount mounts a view of backing on dir (both must exist). Unmount it when
// done, after every process using it has closed its files.
func Mount(backing, dir string) (*FS, error) {
	f := &FS{Dir: dir, Backing: backing, dirty: make(map[uint64]*undoLog)}
	root := &fs.LoopbackRoot{Path: backing}
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, err
	}
	root.Dev = st.Dev
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, fs: f}
	}
	root.RootNode = root.NewNode(root, nil, "", &st)
	// No attribute or entry caching: after a power loss the kernel must
	// see the backing files as they are.
	var zero time.Duration
	srv, err := fs.Mount(dir, root.RootNode, &fs.Options{
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{DirectMountStrict: true, FsName: backing, Name: "faultfs"},
	})
	if err != nil {
		return nil, err
	}
	f.server = srv
	return f, nil
}

// MountT mounts backing on dir for a test and unmounts it in the test's
// cleanup (register it before starting the processes that use it, so that
// their cleanup runs first). It skips the test where FUSE cannot be used.
func MountT(t testing.TB, backing, dir string) *FS {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("faultfs: /dev/fuse not available (%v); these tests need FUSE and root", err)
	}
	f, err := Mount(backing, dir)
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
		t.Skipf("faultfs: mounting FUSE is not permitted here (%v); these tests need root", err)
	}
	if err != nil {
		t.Fatalf("faultfs: mount %s on %s: %v", backing, dir, err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Errorf("faultfs: %v", err)
		}
	})
	return f
}

// Unmount unmounts the filesystem; if it is still busy it is detached
// (lazily unmounted) instead. Logs not played back are dropped.
func (f *FS) Unmount() error {
	err := f.server.Unmount()
	if err != nil {
		if derr := syscall.Unmount(f.Dir, syscall.MNT_DETACH); derr != nil {
			return fmt.Errorf("unmount %s: %v; detach: %v", f.Dir, err, derr)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for ino, u := range f.dirty {
		syscall.Close(u.fd)
		delete(f.dirty, ino)
	}
	return nil
}

// Set puts faults in force, replacing the previous ones; Set(Faults{})
// clears them. An fsync already delayed keeps its delay.
func (f *FS) Set(faults Faults) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = faults
}

// Stats returns the counts of the faults injected.
func (f *FS) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// count changes a count of f.stats under f.mu.
func (f *FS) count(do func(*Stats)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	do(&f.stats)
}

// Unsynced returns how many files have changes not yet synced.
func (f *FS) Unsynced() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.dirty)
}

// PowerLoss drops every change not yet synced: each file changed since its
// last fsync gets back its content and size as of that fsync. With r not
// nil, each such file keeps instead a random prefix of the changes that
// followed its fsync, the last one possibly torn: cut at a sector boundary
// (a disk writes a sector whole or not at all). Call
// it only once the processes writing through the mount have been killed.
func (f *FS) PowerLoss(r *rand.Rand) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for ino, u := range f.dirty {
		keep, torn := 0, int64(-1)
		if r != nil {
			keep = r.IntN(len(u.recs) + 1)
			if keep < len(u.recs) {
				torn = u.recs[keep].tornAt(r)
			}
		}
		for i := len(u.recs) - 1; i >= keep; i-- {
			rec, from := u.recs[i], int64(0)
			if i == keep && torn >= 0 {
				from = torn
			}
			errs = append(errs, rec.undo(u.fd, from))
		}
		syscall.Close(u.fd)
		delete(f.dirty, ino)
	}
	return errors.Join(errs...)
}

// sectorSize is the unit a disk writes whole or not at all: a write cut by
// a power loss ends at a multiple of it in the file.
const sectorSize = 512

// tornAt picks how many bytes of the write a power loss keeps: a cut at a
// random sector boundary inside it, -1 (none kept) if it crosses none.
func (rec undoRec) tornAt(r *rand.Rand) int64 {
	first := (rec.off/sectorSize + 1) * sectorSize // the first boundary past the write's start
	if rec.n == 0 || first >= rec.off+rec.n {
		return -1
	}
	boundaries := (rec.off+rec.n-1-first)/sectorSize + 1
	return first + r.Int64N(boundaries)*sectorSize - rec.off
}

// undo takes the change back, but for the first from bytes a write wrote.
func (rec undoRec) undo(fd int, from int64) error {
	if from < int64(len(rec.old)) {
		if _, err := syscall.Pwrite(fd, rec.old[from:], rec.off+from); err != nil {
			return fmt.Errorf("faultfs: power loss: %w", err)
		}
	}
	size := rec.size
	if from > 0 {
		size = max(size, rec.off+from)
	}
	if err := syscall.Ftruncate(fd, size); err != nil {
		return fmt.Errorf("faultfs: power loss: %w", err)
	}
	return nil
}

// faultsFor returns the faults that apply to the file at path.
func (f *FS) faultsFor(path string) Faults {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.faults.Only != nil && !f.faults.Only(path) {
		return Faults{}
	}
	return f.faults
}

// writeErr returns the error that fails a change to the file at path (0:
// none), counting it.
func (f *FS) writeErr(path string) syscall.Errno {
	e := f.faultsFor(path).WriteErr
	if e != 0 {
		f.count(func(s *Stats) { s.FailedWrites++ })
	}
	return e
}

// change runs a change to the file open as fd (inode ino), first recording
// in the file's undo log the file's size and the span bytes at off that the
// change may overwrite; n is the length it writes at off, if a write.
func (f *FS) change(fd int, ino uint64, off, span, n int64, do func() syscall.Errno) syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.dirty[ino]
	if u == nil {
		// Our own descriptor, readable and writable whatever fd's mode.
		rw, err := syscall.Open(fmt.Sprintf("/proc/self/fd/%d", fd), syscall.O_RDWR|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fs.ToErrno(err)
		}
		u = &undoLog{fd: rw}
		f.dirty[ino] = u
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(u.fd, &st); err != nil {
		return fs.ToErrno(err)
	}
	rec := undoRec{off: off, size: st.Size, n: n}
	if end := min(off+span, st.Size); end > off {
		rec.old = make([]byte, end-off)
		if _, err := syscall.Pread(u.fd, rec.old, off); err != nil {
			return fs.ToErrno(err)
		}
	}
	errno := do()
	if errno == 0 {
		u.recs = append(u.recs, rec)
	}
	return errno
}

// synced forgets the undo log of inode ino: its changes are durable.
func (f *FS) synced(ino uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if u := f.dirty[ino]; u != nil {
		syscall.Close(u.fd)
		delete(f.dirty, ino)
	}
}

// node is a loopback node whose files are opened as faultable files.
type node struct {
	fs.LoopbackNode
	fs *FS
}

var (
	_ fs.NodeOpener  = (*node)(nil)
	_ fs.NodeCreater = (*node)(nil)
)

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return n.wrap(fh, fuseFlags, n.Path(nil))
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	child, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	// The child is not in the tree yet: its path is its parent's and name.
	ch, fuseFlags, errno := n.wrap(fh, fuseFlags, filepath.Join(n.Path(nil), name))
	return child, ch, fuseFlags, errno
}

// wrap makes a loopback file handle a faultable one; path is the file's.
func (n *node) wrap(fh fs.FileHandle, fuseFlags uint32, path string) (fs.FileHandle, uint32, syscall.Errno) {
	lf := fh.(*fs.LoopbackFile)
	fd, _ := lf.PassthroughFd() // the descriptor, not a request for passthrough
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		lf.Release(context.Background())
		return nil, 0, fs.ToErrno(err)
	}
	return &file{loopbackFile: lf, fs: n.fs, fd: fd, ino: st.Ino, path: path}, fuseFlags, 0
}

// loopbackFile is what file passes through to the loopback file: every
// operation but passthrough, which would let writes bypass us.
type loopbackFile interface {
	fs.FileReader
	fs.FileWriter
	fs.FileReleaser
	fs.FileFlusher
	fs.FileFsyncer
	fs.FileGetattrer
	fs.FileSetattrer
	fs.FileAllocater
	fs.FileLseeker
}

// file is an open file whose writes and syncs may fail or stall.
type file struct {
	loopbackFile
	fs   *FS
	fd   int
	ino  uint64
	path string
}

func (h *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if e := h.fs.writeErr(h.path); e != 0 {
		return 0, e
	}
	var written uint32
	errno := h.fs.change(h.fd, h.ino, off, int64(len(data)), int64(len(data)), func() (errno syscall.Errno) {
		written, errno = h.loopbackFile.Write(ctx, data, off)
		return errno
	})
	return written, errno
}

func (h *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	size, ok := in.GetSize()
	if !ok {
		return h.loopbackFile.Setattr(ctx, in, out)
	}
	if e := h.fs.writeErr(h.path); e != 0 {
		return e
	}
	// A truncate overwrites what lies past the new size.
	return h.fs.change(h.fd, h.ino, int64(size), math.MaxInt64-int64(size), 0, func() syscall.Errno {
		return h.loopbackFile.Setattr(ctx, in, out)
	})
}

func (h *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if e := h.fs.writeErr(h.path); e != 0 {
		return e
	}
	return h.fs.change(h.fd, h.ino, int64(off), 0, 0, func() syscall.Errno {
		return h.loopbackFile.Allocate(ctx, off, size, mode)
	})
}

func (h *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	faults := h.fs.faultsFor(h.path)
	if faults.FsyncDelay > 0 {
		h.fs.count(func(s *Stats) { s.DelayedFsyncs++; s.Stalled++ })
		time.Sleep(faults.FsyncDelay)
		h.fs.count(func(s *Stats) { s.Stalled-- })
	}
	if faults.FsyncErr != 0 {
		h.fs.count(func(s *Stats) { s.FailedFsyncs++ })
		return faults.FsyncErr
	}
	if errno := h.loopbackFile.Fsync(ctx, flags); errno != 0 {
		return errno
	}
	h.fs.synced(h.ino)
	return 0
}
