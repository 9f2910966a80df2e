package walfmt

import (
	"errors"
	"fmt"
	"os"
)

// keepFrom returns the position in segs (ordered by sequence) of the segment
// that holds index: the last one cut at or before it. Everything before that
// position is not needed to replay the log after index. It returns 0 when
// index is before every segment.
func keepFrom(segs []Segment, index uint64) int {
	keep := 0
	for i, s := range segs {
		if s.Index <= index {
			keep = i
		}
	}
	return keep
}

// ReleaseLockTo closes and unlocks the segments the writer holds that come
// before the segment holding index, typically the index of a snapshot just
// saved: replay will start at that segment, so the older ones may be removed
// (by RemoveSegmentsBefore or any other purger that respects the locks). The
// tail is never released.
func (w *Writer) ReleaseLockTo(index uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	return w.releaseBefore(index)
}

func (w *Writer) releaseBefore(index uint64) error {
	segs := make([]Segment, len(w.segs))
	for i, s := range w.segs {
		segs[i] = s.Segment
	}
	keep := keepFrom(segs, index)
	var errs []error
	for _, s := range w.segs[:keep] {
		if err := s.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("release wal %s: %w", s.Path, err))
		}
	}
	w.segs = append(w.segs[:0], w.segs[keep:]...)
	return errors.Join(errs...)
}

// RemoveSegmentsBefore releases (see ReleaseLockTo) and deletes every segment
// file in the directory that comes before the segment holding index, and
// returns the paths removed, oldest first. It stops, with ErrLocked, at a file
// another writer still holds.
func (w *Writer) RemoveSegmentsBefore(index uint64) ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrClosed
	}
	if err := w.releaseBefore(index); err != nil {
		return nil, err
	}
	all, err := ListSegments(w.dir)
	if err != nil {
		return nil, fmt.Errorf("purge wal %s: %w", w.dir, err)
	}
	held := w.segs[0].Seq
	var removed []string
	for _, s := range all[:keepFrom(all, index)] {
		if s.Seq >= held {
			break
		}
		if err := removeUnlocked(s.Path); err != nil {
			return removed, fmt.Errorf("purge wal %s: %w", s.Path, err)
		}
		removed = append(removed, s.Path)
	}
	if len(removed) > 0 {
		if err := syncDir(w.dir); err != nil {
			return removed, fmt.Errorf("purge wal %s: %w", w.dir, err)
		}
	}
	return removed, nil
}

// removeUnlocked deletes the file at path if no one holds its lock.
func removeUnlocked(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tryLock(f); err != nil {
		return err
	}
	return os.Remove(path)
}
