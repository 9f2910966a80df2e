package walfmt

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/failpoint"
)

// SegmentSizeBytes is the size past which the writer cuts a new segment, and
// the size segments are preallocated to: etcd's "64 MB", 64*1000*1000 bytes.
const SegmentSizeBytes int64 = 64 * 1000 * 1000

const (
	tmpExt      = ".tmp"
	dirMode     = 0o700
	segmentMode = 0o600
)

// SyncPolicy says when the writer fsyncs.
type SyncPolicy int

const (
	// SyncOnWrite fsyncs once at the end of every Save or SaveSnapshot that
	// wrote something (and on every segment cut).
	SyncOnWrite SyncPolicy = iota
	// SyncNever never fsyncs on its own; a crash may lose acknowledged writes.
	// For tests and benchmarks only. Writer.Sync still syncs.
	SyncNever
)

// Options configure a Writer.
type Options struct {
	// SegmentSize is the cut threshold and preallocation size; 0 means SegmentSizeBytes.
	SegmentSize int64
	// Sync is the fsync policy.
	Sync SyncPolicy
	// OnWrite and OnSync, if set, are told of each write (its bytes and
	// the time it took) and of each fsync (its time), for metrics.
	OnWrite func(bytes int, took time.Duration)
	OnSync  func(took time.Duration)
}

func (o Options) segmentSize() int64 {
	if o.SegmentSize <= 0 {
		return SegmentSizeBytes
	}
	return o.SegmentSize
}

// openSegment is a segment the writer holds open and locked.
type openSegment struct {
	Segment
	f *os.File
}

// Writer appends records to a WAL directory. It holds an exclusive lock on
// every segment it has open, from the one holding its start snapshot to the
// tail. Its methods are safe for concurrent use. After a failed write the
// Writer refuses further writes: what reached the disk is unknown, and the
// member must restart from what ReadAll finds.
type Writer struct {
	mu   sync.Mutex
	dir  string
	opts Options

	metadata  []byte            // raw metadata record data, repeated in every segment
	state     *raftpb.HardState // last non-empty hard state saved, repeated after a cut
	lastIndex uint64            // index of the last entry (or snapshot) written
	crc       uint32            // running CRC after the last record written
	segs      []openSegment     // oldest first; the last is the tail
	off       int64             // write offset in the tail
	buf       []byte            // frames of the current write
	scratch   []byte            // marshalled payload of the current record
	err       error             // sticky write failure
	closed    bool
}

func (w *Writer) tail() *openSegment { return &w.segs[len(w.segs)-1] }

// Dir returns the WAL directory.
func (w *Writer) Dir() string { return w.dir }

// Segments returns the segments the writer holds, oldest first.
func (w *Writer) Segments() []Segment {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Segment, len(w.segs))
	for i, s := range w.segs {
		out[i] = s.Segment
	}
	return out
}

// LastIndex returns the index of the last entry written (or of a later snapshot record).
func (w *Writer) LastIndex() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastIndex
}

func isEmptyHardState(st *raftpb.HardState) bool {
	return st.GetTerm() == 0 && st.GetVote() == 0 && st.GetCommit() == 0
}

// appendRecord adds the frame of a record with this data to w.buf and moves
// the CRC chain on.
func (w *Writer) appendRecord(t RecordType, data []byte) {
	w.crc = Chain(w.crc, data)
	w.buf = AppendRecordFrame(w.buf, Record{Type: t, CRC: w.crc, Data: data})
}

func (w *Writer) appendMessage(t RecordType, m proto.Message) error {
	var err error
	w.scratch, err = proto.MarshalOptions{}.MarshalAppend(w.scratch[:0], m)
	if err != nil {
		return fmt.Errorf("marshal %s record: %w", t, err)
	}
	w.appendRecord(t, w.scratch)
	return nil
}

func (w *Writer) usable() error {
	if w.closed {
		return ErrClosed
	}
	return w.err
}

// Save appends the entries and then, unless it is nil or empty, the hard
// state, in one write, and fsyncs once (per the sync policy). Nothing is
// written, and nothing synced, when there is nothing to save. When the tail
// passes the segment size, a new segment is cut.
func (w *Writer) Save(st *raftpb.HardState, ents []*raftpb.Entry) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	hasState := st != nil && !isEmptyHardState(st)
	if !hasState && len(ents) == 0 {
		return nil
	}
	crc, lastIndex := w.crc, w.lastIndex
	w.buf = w.buf[:0]
	for _, e := range ents {
		if err := w.appendMessage(RecordEntry, e); err != nil {
			w.crc = crc
			return err
		}
		lastIndex = e.GetIndex()
	}
	if hasState {
		if err := w.appendMessage(RecordState, st); err != nil {
			w.crc = crc
			return err
		}
	}
	if err := w.write(); err != nil {
		return err
	}
	w.lastIndex = lastIndex
	if hasState {
		w.state = proto.Clone(st).(*raftpb.HardState)
	}
	if w.off >= w.opts.segmentSize() {
		return w.cut()
	}
	return w.syncPerPolicy()
}

// SaveSnapshot appends a snapshot record and fsyncs (per the sync policy).
func (w *Writer) SaveSnapshot(s Snapshot) error {
	data, err := MarshalSnapshot(s)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	w.buf = w.buf[:0]
	w.appendRecord(RecordSnapshot, data)
	if err := w.write(); err != nil {
		return err
	}
	w.lastIndex = max(w.lastIndex, s.Index)
	return w.syncPerPolicy()
}

// Sync fsyncs the tail segment, whatever the policy.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	return w.sync()
}

// write writes w.buf at the tail's write offset.
func (w *Writer) write() error {
	t := w.tail()
	start := time.Now()
	if _, err := t.f.WriteAt(w.buf, w.off); err != nil {
		w.err = fmt.Errorf("write wal %s at offset %d: %w", t.Path, w.off, err)
		return w.err
	}
	if w.opts.OnWrite != nil {
		w.opts.OnWrite(len(w.buf), time.Since(start))
	}
	w.off += int64(len(w.buf))
	return nil
}

func (w *Writer) sync() error {
	t := w.tail()
	failpoint.Hit("walBeforeFsync")
	start := time.Now()
	if err := datasync(t.f); err != nil {
		w.err = fmt.Errorf("sync wal %s: %w", t.Path, err)
		return w.err
	}
	if w.opts.OnSync != nil {
		w.opts.OnSync(time.Since(start))
	}
	failpoint.Hit("walAfterFsync")
	return nil
}

func (w *Writer) syncPerPolicy() error {
	if w.opts.Sync == SyncNever {
		return nil
	}
	return w.sync()
}

// Close syncs the tail (per the sync policy) and releases all segments.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	var err error
	if w.err == nil && len(w.segs) > 0 {
		err = w.syncPerPolicy()
	}
	w.closed = true
	if cerr := w.closeFiles(); err == nil {
		err = cerr
	}
	return err
}

func (w *Writer) closeFiles() error {
	var errs []error
	for _, s := range w.segs {
		if err := s.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close wal %s: %w", s.Path, err))
		}
	}
	w.segs = nil
	return errors.Join(errs...)
}
