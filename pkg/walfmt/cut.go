package walfmt

import (
	"fmt"
	"os"
	"path/filepath"
)

// cut closes the tail at its data and starts the next segment, named after
// the next sequence number and the index after the last entry. The segment is
// prepared as NAME.tmp (preallocated, header written and synced) and renamed
// into place, so a crash leaves no half-made segment behind.
func (w *Writer) cut() error {
	old := w.tail()
	if err := old.f.Truncate(w.off); err != nil {
		w.err = fmt.Errorf("cut wal %s: truncate at %d: %w", old.Path, w.off, err)
		return w.err
	}
	if err := w.syncPerPolicy(); err != nil {
		return err
	}
	seq, index := old.Seq+1, w.lastIndex+1
	final := filepath.Join(w.dir, SegmentName(seq, index))
	if err := w.startSegment(final+tmpExt, seq, index); err != nil {
		w.err = fmt.Errorf("cut wal %s: %w", final, err)
		return w.err
	}
	t := w.tail()
	if err := os.Rename(t.Path, final); err != nil {
		w.err = fmt.Errorf("cut wal %s: %w", final, err)
		return w.err
	}
	t.Path = final
	if w.opts.Sync != SyncNever {
		if err := syncDir(w.dir); err != nil {
			w.err = fmt.Errorf("cut wal %s: %w", final, err)
			return w.err
		}
	}
	return nil
}

// startSegment creates, locks and preallocates the file of segment (seq,
// index) at path (its final name or a temporary one), writes the segment's
// first records and makes it the tail: the crc record carrying the running
// CRC, the metadata record, then for sequence 0 an empty snapshot record and
// for later segments the last hard state, if any.
func (w *Writer) startSegment(path string, seq, index uint64) error {
	seg := Segment{Path: path, Seq: seq, Index: index}
	f, err := os.OpenFile(seg.Path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, segmentMode)
	if err != nil {
		return err
	}
	if err := tryLock(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("lock %s: %w", seg.Path, err)
	}
	if err := preallocate(f, w.opts.segmentSize()); err != nil {
		_ = f.Close()
		return fmt.Errorf("preallocate %s: %w", seg.Path, err)
	}
	crc := w.crc
	w.buf = w.buf[:0]
	w.appendRecord(RecordCRC, nil)
	w.appendRecord(RecordMetadata, w.metadata)
	if seq == 0 {
		data, _ := MarshalSnapshot(Snapshot{})
		w.appendRecord(RecordSnapshot, data)
	} else if w.state != nil {
		if err := w.appendMessage(RecordState, w.state); err != nil {
			w.crc = crc
			_ = f.Close()
			return err
		}
	}
	if _, err := f.WriteAt(w.buf, 0); err != nil {
		w.crc = crc
		_ = f.Close()
		return fmt.Errorf("write %s: %w", seg.Path, err)
	}
	if w.opts.Sync != SyncNever {
		if err := datasync(f); err != nil {
			w.crc = crc
			_ = f.Close()
			return fmt.Errorf("sync %s: %w", seg.Path, err)
		}
	}
	w.segs = append(w.segs, openSegment{Segment: seg, f: f})
	w.off = int64(len(w.buf))
	return nil
}
