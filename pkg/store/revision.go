package store

import (
	"encoding/binary"
	"fmt"

	"github.com/cairnkv/cairn/pkg/keyindex"
)

// Revision identifies one change in the store (see keyindex.Revision).
type Revision = keyindex.Revision

// RevisionKeyLen is the length of an encoded revision without the tombstone mark.
const RevisionKeyLen = 17

// tombstoneMark is appended to the revision key of a deletion.
const tombstoneMark = 't'

// AppendRevisionKey appends the 17-byte key of r (8-byte big-endian main, '_',
// 8-byte big-endian sub), plus the tombstone mark if tombstone is set.
func AppendRevisionKey(dst []byte, r Revision, tombstone bool) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Main))
	dst = append(dst, '_')
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Sub))
	if tombstone {
		dst = append(dst, tombstoneMark)
	}
	return dst
}

// RevisionKey returns the key of r in the key bucket.
func RevisionKey(r Revision, tombstone bool) []byte {
	return AppendRevisionKey(make([]byte, 0, RevisionKeyLen+1), r, tombstone)
}

// ParseRevisionKey decodes a key of the key bucket. It accepts exactly 17
// bytes, or 18 bytes ending in the tombstone mark.
func ParseRevisionKey(b []byte) (rev Revision, tombstone bool, err error) {
	switch {
	case len(b) == RevisionKeyLen:
	case len(b) == RevisionKeyLen+1 && b[RevisionKeyLen] == tombstoneMark:
		tombstone = true
	default:
		return Revision{}, false, fmt.Errorf("revision key %x: want %d bytes (or %d ending in 't'), got %d",
			b, RevisionKeyLen, RevisionKeyLen+1, len(b))
	}
	if b[8] != '_' {
		return Revision{}, false, fmt.Errorf("revision key %x: missing '_' separator", b)
	}
	rev.Main = int64(binary.BigEndian.Uint64(b[:8]))
	rev.Sub = int64(binary.BigEndian.Uint64(b[9:17]))
	return rev, tombstone, nil
}

// readRev is the revision a read asked for at rev reads at, in a store at
// curRev compacted up to compactRev: rev itself, or curRev for 0 (or less);
// a revision to come, or one compacted away, is an error.
func readRev(rev, curRev, compactRev int64) (int64, error) {
	switch {
	case rev > curRev:
		return 0, ErrFutureRev
	case rev <= 0:
		return curRev, nil
	case rev < compactRev:
		return 0, ErrCompacted
	}
	return rev, nil
}
