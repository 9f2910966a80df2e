package walfmt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// SegmentExt is the file name extension of WAL segments.
const SegmentExt = ".wal"

// Segment is one WAL file, named %016x-%016x.wal after its sequence number and
// the index of the first entry it was cut for.
type Segment struct {
	// Path is the file's path.
	Path string
	// Seq is the sequence number; it grows by one from segment to segment.
	Seq uint64
	// Index is the raft index the segment was cut at: entries written to it have
	// this index or (after a raft log truncation) a lower one.
	Index uint64
}

// Name is the base name of the segment file.
func (s Segment) Name() string { return filepath.Base(s.Path) }

// SegmentName is the file name of the segment with this sequence and index.
func SegmentName(seq, index uint64) string {
	return fmt.Sprintf("%016x-%016x%s", seq, index, SegmentExt)
}

// ParseSegmentName returns the sequence and index of a segment file name.
func ParseSegmentName(name string) (seq, index uint64, err error) {
	stem, ok := strings.CutSuffix(name, SegmentExt)
	if !ok {
		return 0, 0, fmt.Errorf("%q does not end in %s", name, SegmentExt)
	}
	seqHex, indexHex, ok := strings.Cut(stem, "-")
	if !ok || len(seqHex) != 16 || len(indexHex) != 16 {
		return 0, 0, fmt.Errorf("%q is not %%016x-%%016x%s", name, SegmentExt)
	}
	if seq, err = strconv.ParseUint(seqHex, 16, 64); err != nil {
		return 0, 0, fmt.Errorf("%q: sequence: %w", name, err)
	}
	if index, err = strconv.ParseUint(indexHex, 16, 64); err != nil {
		return 0, 0, fmt.Errorf("%q: index: %w", name, err)
	}
	return seq, index, nil
}

// ListSegments returns the segments in dir ordered by sequence number. Files not
// ending in .wal (such as .tmp and .broken files) are ignored. A .wal file with
// a malformed name gives an *Error with reason ErrBadFileName (several are
// joined); the segments returned alongside are still the well-named ones.
func ListSegments(dir string) ([]Segment, error) {
	segs, badNames, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	return segs, errors.Join(badNames...)
}

// listSegments is ListSegments with the bad names kept apart from the
// failure to read the directory.
func listSegments(dir string) (segs []Segment, badNames []error, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("list wal dir %s: %w", dir, err)
	}
	for _, de := range ents {
		name := de.Name()
		if !strings.HasSuffix(name, SegmentExt) || de.IsDir() {
			continue
		}
		seq, index, err := ParseSegmentName(name)
		if err != nil {
			badNames = append(badNames, newError(filepath.Join(dir, name), -1, ErrBadFileName, err))
			continue
		}
		segs = append(segs, Segment{Path: filepath.Join(dir, name), Seq: seq, Index: index})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].Seq < segs[j].Seq })
	return segs, badNames, nil
}

// SegmentsFrom returns the tail of segs (ordered by sequence) needed to replay
// the log after index: it starts at the last segment cut at or before index.
// When every segment was cut after index, the entries right after index are
// gone and the error has reason ErrMissingSegment.
func SegmentsFrom(segs []Segment, index uint64) ([]Segment, error) {
	if len(segs) == 0 {
		return nil, ErrNoWAL
	}
	start := -1
	for i, s := range segs {
		if s.Index <= index {
			start = i
		}
	}
	if start < 0 {
		return nil, newError(segs[0].Path, -1, ErrMissingSegment,
			fmt.Errorf("oldest segment starts at index %d, after %d", segs[0].Index, index))
	}
	return segs[start:], nil
}

// checkSequence reports a gap or repetition between consecutive segments.
func checkSequence(prev, next Segment) error {
	if next.Seq != prev.Seq+1 {
		return newError(next.Path, -1, ErrMissingSegment,
			fmt.Errorf("sequence %d follows %d (%s)", next.Seq, prev.Seq, prev.Name()))
	}
	return nil
}
