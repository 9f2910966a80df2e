package walfmt

import (
	"errors"
	"fmt"
)

// Reasons for a damaged or unusable WAL. An *Error carries one of them as its
// Reason, so callers can test with errors.Is(err, walfmt.ErrCRCMismatch).
var (
	// ErrTornFrame: a frame runs past the end of its file, the typical trace of a
	// crash in the middle of a write.
	ErrTornFrame = errors.New("torn frame")
	// ErrBadFrame: a frame's length word is not one a writer produces
	// (inconsistent padding bits or a zero record length).
	ErrBadFrame = errors.New("bad frame header")
	// ErrBadRecord: the record or its payload is not valid protobuf, or has an
	// unknown record type.
	ErrBadRecord = errors.New("bad record")
	// ErrCRCMismatch: a record's crc does not continue the CRC chain.
	ErrCRCMismatch = errors.New("crc mismatch")
	// ErrBadSegmentStart: a segment does not start with a crc record followed by
	// a metadata record.
	ErrBadSegmentStart = errors.New("bad segment start")
	// ErrDataAfterTail: non-zero bytes follow the zero length word that ends a
	// segment (only reported when DecoderOptions.VerifyTail is set).
	ErrDataAfterTail = errors.New("data after end of segment")
	// ErrMissingSegment: the segment sequence numbers have a gap, or no segment
	// holds the requested index.
	ErrMissingSegment = errors.New("missing segment")
	// ErrBadFileName: a *.wal file whose name is not %016x-%016x.wal.
	ErrBadFileName = errors.New("bad file name")
	// ErrIO: the file could not be read.
	ErrIO = errors.New("i/o error")
	// ErrMetadataConflict: two segments carry different metadata.
	ErrMetadataConflict = errors.New("metadata conflict")
	// ErrEntryGap: an entry's index leaves a hole after the previous entries.
	ErrEntryGap = errors.New("entry index gap")
)

// Errors that concern the WAL as a whole rather than a place in a file.
var (
	// ErrNoWAL: the directory holds no WAL segment.
	ErrNoWAL = errors.New("no wal segments")
	// ErrSnapshotNotFound: no snapshot record matches the snapshot asked for.
	ErrSnapshotNotFound = errors.New("snapshot record not found in wal")
	// ErrSnapshotMismatch: a snapshot record has the index asked for but another term.
	ErrSnapshotMismatch = errors.New("snapshot record term mismatch")
	// ErrLocked: another writer holds the lock on a segment.
	ErrLocked = errors.New("wal segment is locked by another writer")
	// ErrClosed: the Writer was closed.
	ErrClosed = errors.New("wal writer closed")
	// ErrNotRepairable: Repair found damage it must not truncate away.
	ErrNotRepairable = errors.New("wal damage is not repairable")
)

// Error locates a problem in a WAL: which file, at which byte offset, and why.
type Error struct {
	// File is the path of the segment file.
	File string
	// Offset is the byte offset of the frame (its length word) in File, or -1
	// when the problem is not at a place in the file (e.g. a missing segment).
	Offset int64
	// Reason is one of the Err* values of this package.
	Reason error
	// Err is the underlying cause or detail; it may be nil.
	Err error
}

// Error formats as "wal FILE at offset N: REASON: DETAIL".
func (e *Error) Error() string {
	where := "wal " + e.File
	if e.Offset >= 0 {
		where = fmt.Sprintf("wal %s at offset %d", e.File, e.Offset)
	}
	if e.Err == nil {
		return fmt.Sprintf("%s: %v", where, e.Reason)
	}
	return fmt.Sprintf("%s: %v: %v", where, e.Reason, e.Err)
}

// Unwrap exposes both the reason and the underlying cause to errors.Is/As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Err}
}

func newError(file string, offset int64, reason, cause error) *Error {
	return &Error{File: file, Offset: offset, Reason: reason, Err: cause}
}
