package snapfmt

import "errors"

// Reasons a snapshot file is rejected; returned errors wrap one of them
// together with the file's path.
var (
	// ErrEmpty: the .snap file has no bytes.
	ErrEmpty = errors.New("empty snapshot file")
	// ErrTruncated: the .snap file ends in the middle of a field.
	ErrTruncated = errors.New("truncated snapshot file")
	// ErrBadFormat: the bytes are not a snapshot file (bad protobuf, no data).
	ErrBadFormat = errors.New("malformed snapshot file")
	// ErrCRCMismatch: the stored crc is not the CRC-32C of the data.
	ErrCRCMismatch = errors.New("snapshot crc mismatch")
	// ErrNameMismatch: the file's name does not match the snapshot's term and index.
	ErrNameMismatch = errors.New("snapshot file name does not match its metadata")
	// ErrBadName: a .snap file whose name is not %016x-%016x.snap.
	ErrBadName = errors.New("bad snapshot file name")
	// ErrNoSnapshot: no valid .snap file was found.
	ErrNoSnapshot = errors.New("no snapshot")

	// ErrNoTrailer: a snapshot db file has no sha256 trailer (its size is not
	// 32 more than a multiple of 512).
	ErrNoTrailer = errors.New("snapshot db has no sha256 trailer")
	// ErrTrailerMismatch: the sha256 trailer does not match the db bytes.
	ErrTrailerMismatch = errors.New("snapshot db sha256 mismatch")
)
