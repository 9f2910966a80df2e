package walfmt

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
)

// ReadResult is what a member restarts from: the WAL's metadata, its last hard
// state, and the raft log after the snapshot it was asked to start from.
type ReadResult struct {
	// Metadata is the node and cluster ID every segment carries.
	Metadata *etcdserverpb.Metadata
	// HardState is the last hard state record (an empty HardState if there is none).
	HardState *raftpb.HardState
	// Entries are the entries after the snapshot index, in index order, each
	// index once: an entry written later with the same index replaced the
	// earlier one and everything after it (raft log truncation). Only entries
	// at or below HardState.Commit are final.
	Entries []*raftpb.Entry

	tail readTail
}

// readTail is where an appender continues after a ReadAll.
type readTail struct {
	segments    []Segment // the segments read, oldest first
	endOffset   int64     // end of the frames of the last segment
	crc         uint32    // running CRC after the last record
	lastIndex   uint64    // index of the last entry written (or the snapshot's)
	metadataRaw []byte
}

// ReadAll reads the WAL in dir from the segment that holds snap, checking
// everything the Decoder checks. Any damage makes it fail with the *Error
// (a torn tail in the last segment can be fixed with Repair). It also fails
// with ErrSnapshotNotFound unless a snapshot record with snap's index exists
// (the first segment's empty record matches Snapshot{}), with
// ErrSnapshotMismatch if that record has another term, with
// ErrMetadataConflict if segments disagree on the metadata, and with
// ErrEntryGap if an entry leaves a hole in the log.
func ReadAll(dir string, snap Snapshot) (*ReadResult, error) {
	segs, err := selectSegments(dir, snap.Index)
	if err != nil {
		return nil, err
	}
	return readSegments(segs, snap)
}

// selectSegments lists dir and returns the segments needed to replay after index.
func selectSegments(dir string, index uint64) ([]Segment, error) {
	all, err := ListSegments(dir) // errors name the directory or file
	if err != nil {
		return nil, err
	}
	segs, err := SegmentsFrom(all, index)
	if errors.Is(err, ErrNoWAL) {
		return nil, fmt.Errorf("read wal %s: %w", dir, err)
	}
	return segs, err
}

func readSegments(segs []Segment, snap Snapshot) (*ReadResult, error) {
	d := NewDecoder(segs, DecoderOptions{})
	defer d.Close()
	res := &ReadResult{HardState: &raftpb.HardState{}}
	matched := false
	lastIndex := uint64(0)
	for {
		it, err := d.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch it.Type {
		case RecordMetadata:
			if res.tail.metadataRaw != nil && !bytes.Equal(res.tail.metadataRaw, it.Data) {
				return nil, newError(it.Segment.Path, it.Offset, ErrMetadataConflict,
					fmt.Errorf("metadata %v differs from %v", it.Metadata, res.Metadata))
			}
			res.Metadata, res.tail.metadataRaw = it.Metadata, it.Data
		case RecordEntry:
			lastIndex = it.Entry.GetIndex()
			if res.Entries, err = appendEntry(res.Entries, it.Entry, snap.Index); err != nil {
				return nil, newError(it.Segment.Path, it.Offset, ErrEntryGap, err)
			}
		case RecordState:
			res.HardState = it.HardState
		case RecordSnapshot:
			if it.Snapshot.Index == snap.Index {
				if it.Snapshot.Term != snap.Term {
					return nil, newError(it.Segment.Path, it.Offset, ErrSnapshotMismatch,
						fmt.Errorf("record has term %d, want %d at index %d", it.Snapshot.Term, snap.Term, snap.Index))
				}
				matched = true
			}
			lastIndex = max(lastIndex, it.Snapshot.Index)
		}
	}
	if !matched {
		return nil, fmt.Errorf("read wal from %s: index %d term %d: %w", segs[0].Path, snap.Index, snap.Term, ErrSnapshotNotFound)
	}
	if res.Metadata == nil {
		// Unreachable: the decoder insists on a metadata record per segment.
		return nil, newError(segs[0].Path, -1, ErrBadSegmentStart, errors.New("no metadata record"))
	}
	res.tail = readTail{
		segments:    segs,
		endOffset:   d.EndOffset(),
		crc:         d.CRC(),
		lastIndex:   max(lastIndex, snap.Index),
		metadataRaw: res.tail.metadataRaw,
	}
	return res, nil
}

// appendEntry adds e to ents, the entries after index snapIndex, with raft's
// truncation rule: e replaces the entry with its index and all after it.
func appendEntry(ents []*raftpb.Entry, e *raftpb.Entry, snapIndex uint64) ([]*raftpb.Entry, error) {
	idx := e.GetIndex()
	if idx <= snapIndex {
		return ents, nil
	}
	pos := idx - snapIndex - 1
	if pos > uint64(len(ents)) {
		return ents, fmt.Errorf("entry %d follows entry %d", idx, snapIndex+uint64(len(ents)))
	}
	return append(ents[:pos], e), nil
}
