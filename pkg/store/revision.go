package store

import (
	"cmp"
	"encoding/binary"
	"fmt"
)

// Revision identifies one change in the store: Main is the revision of the
// request that made it, Sub the position of the change inside that request
// (0 for a plain put or delete, 0,1,2... for the operations of a txn).
type Revision struct {
	Main int64
	Sub  int64
}

// RevisionKeyLen is the length of an encoded revision without the tombstone mark.
const RevisionKeyLen = 17

// tombstoneMark is appended to the revision key of a deletion.
const tombstoneMark = 't'

// Compare returns -1, 0 or +1 as r is before, the same as, or after o: the
// order of their keys in the backend.
func (r Revision) Compare(o Revision) int {
	if c := cmp.Compare(r.Main, o.Main); c != 0 {
		return c
	}
	return cmp.Compare(r.Sub, o.Sub)
}

func (r Revision) String() string { return fmt.Sprintf("%d_%d", r.Main, r.Sub) }

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
