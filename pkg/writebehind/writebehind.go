// Package writebehind writes a large file with its syncs behind the
// writes: a sync every so many bytes, in a goroutine of its own, so that the
// file never holds much unsynced data.
//
// Why: an ext4 journal commit, which every fsync of a member's WAL waits
// for, first writes out the dirty data of every file on the file system. A
// file of gigabytes written at full speed and synced once at its end left
// hundreds of megabytes dirty, and the WAL's fsyncs waited for them; synced
// every few megabytes, each commit has little of it to write.
package writebehind

import (
	"io"
	"time"
)

// DefaultInterval is the bytes between syncs of cairn's large files (a
// snapshot saved, received or restored, a defragmented db). Synced once at
// its end, a 1.1 GB snapshot written to the disk of the member it came
// from held that member's writes for up to 370 ms while the disk took the
// file; synced every DefaultInterval bytes, for 45 ms at most (BENCHMARKS.md,
// "Snapshots on the member's disk").
const DefaultInterval = 4 << 20

// File is what a Writer writes to: an *os.File.
type File interface {
	io.Writer
	Sync() error
}

// Writer writes to a file and asks for a sync of it every interval bytes.
// The sync runs beside the writes; a write waits only when the next sync
// is due and the one before still runs, so the writes go no faster than
// the disk takes them.
type Writer struct {
	f        File
	interval int
	unsynced int           // bytes written since the last sync was asked for
	syncs    chan struct{} // nil once closed
	synced   chan error
	err      error // Close's result
}

// New returns a Writer of f that syncs it every interval bytes. With
// shareDisk, the disk is left idle after each sync for as long as the sync
// took, for another writer's fsyncs (a member's WAL) to use. The caller
// must Close it.
func New(f File, interval int, shareDisk bool) *Writer {
	w := &Writer{f: f, interval: interval, syncs: make(chan struct{}), synced: make(chan error, 1)}
	go w.syncLoop(w.syncs, shareDisk)
	return w
}

// Write writes p to the file, then asks for a sync if one is due. A sync
// that fails is Close's error, not Write's. Write must not follow Close.
func (w *Writer) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.unsynced += n
	if err == nil && w.unsynced >= w.interval {
		w.unsynced = 0
		w.syncs <- struct{}{}
	}
	return n, err
}

// Close waits for the syncs asked for, then syncs the file once more, and
// returns the first error of them all. It does not close the file. Closing
// again returns the same error and syncs nothing.
func (w *Writer) Close() error {
	if w.syncs == nil {
		return w.err
	}
	close(w.syncs)
	w.syncs = nil
	w.err = <-w.synced
	if err := w.f.Sync(); w.err == nil {
		w.err = err
	}
	return w.err
}

// syncLoop syncs the file each time it is asked to, until syncs closes,
// then sends its first error, or nil, on synced.
func (w *Writer) syncLoop(syncs <-chan struct{}, shareDisk bool) {
	var err error
	for range syncs {
		if err != nil {
			continue
		}
		start := time.Now()
		err = w.f.Sync()
		if shareDisk {
			time.Sleep(time.Since(start))
		}
	}
	w.synced <- err
}
