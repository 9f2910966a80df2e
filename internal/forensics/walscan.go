package forensics

import (
	"errors"
	"fmt"
	"io"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairnkv/cairn/pkg/walfmt"
)

// walScan is what one pass over a WAL learns: enough to say, on a second
// pass, whether each entry is committed or superseded, and to report the
// WAL's health. It holds a few numbers per segment and per raft log
// truncation, never the entries.
type walScan struct {
	dir      string
	segments []walfmt.Segment
	bytes    int64 // total size of the segment files

	records int // good records
	counts  map[walfmt.RecordType]int

	metadata      *pb.Metadata
	lastHardState *raftpb.HardState
	lastSnapshot  *walfmt.Snapshot
	snapshots     []walfmt.Snapshot // index and term of every snapshot record

	entries    int    // entry records, superseded ones included
	firstIndex uint64 // lowest entry index seen
	lastIndex  uint64 // index of the last entry (the log's end)
	lastTerm   uint64 // term of the last entry record
	superseded int    // entries overwritten by a later entry with the same index
	gaps       []string

	// truncations are the places where an entry replaced earlier ones: the
	// ordinal of the entry record and its index. suffixMin[i] is the lowest
	// index among truncations[i:].
	truncations []truncation
	suffixMin   []uint64

	damage     []*walfmt.Error
	lastCRC    uint32
	endOffset  int64
	fatalError error
}

// truncation is an entry that replaced the entries from its index on.
type truncation struct {
	ordinal int
	index   uint64
}

// maxDamageReports bounds the damage a scan remembers; the count goes on.
const maxDamageReports = 100

// scanWAL reads every record of the WAL in dir once. Damage does not stop
// it; the decoder resynchronises where it can. onProgress, if not nil, is
// called with the bytes read so far and the total.
func scanWAL(dir string, onProgress func(done, total int64)) (*walScan, error) {
	segs, err := walfmt.ListSegments(dir)
	if err != nil && len(segs) == 0 {
		return nil, fmt.Errorf("wal %s: %w", dir, err)
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("wal %s: %w", dir, walfmt.ErrNoWAL)
	}
	s := &walScan{dir: dir, segments: segs, counts: map[walfmt.RecordType]int{}}
	pos := newWALPosition(segs)
	s.bytes = pos.total
	d, err := walfmt.OpenDecoder(dir, walfmt.DecoderOptions{VerifyTail: true})
	if err != nil {
		return nil, fmt.Errorf("wal %s: %w", dir, err)
	}
	defer d.Close()
	var expect uint64 // the index the next entry should have; 0: unknown
	for {
		it, err := d.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var we *walfmt.Error
			if !errors.As(err, &we) {
				s.fatalError = err
				break
			}
			s.addDamage(we)
			continue
		}
		if onProgress != nil {
			onProgress(pos.at(it.Segment, it.Offset+it.FrameSize), pos.total)
		}
		s.records++
		s.counts[it.Type]++
		s.lastCRC = it.CRC
		switch {
		case it.Metadata != nil:
			if s.metadata == nil {
				s.metadata = it.Metadata
			}
		case it.HardState != nil:
			s.lastHardState = it.HardState
		case it.Snapshot != nil:
			snap := *it.Snapshot
			s.lastSnapshot = &snap
			s.snapshots = append(s.snapshots, walfmt.Snapshot{Index: snap.Index, Term: snap.Term})
			if snap.Index >= s.lastIndex {
				s.lastIndex = snap.Index
				expect = snap.Index + 1
			}
		case it.Entry != nil:
			s.addEntry(it, s.records-1, &expect)
		}
	}
	s.endOffset = d.EndOffset()
	s.suffixMin = make([]uint64, len(s.truncations))
	for i := len(s.truncations) - 1; i >= 0; i-- {
		s.suffixMin[i] = s.truncations[i].index
		if i+1 < len(s.truncations) {
			s.suffixMin[i] = min(s.suffixMin[i], s.suffixMin[i+1])
		}
	}
	return s, nil
}

// addEntry records an entry: its place in the log, and whether it replaces
// earlier entries or leaves a hole.
func (s *walScan) addEntry(it *walfmt.Item, ordinal int, expect *uint64) {
	idx := it.Entry.GetIndex()
	s.entries++
	if s.firstIndex == 0 || idx < s.firstIndex {
		s.firstIndex = idx
	}
	switch {
	case s.entries > 1 && idx <= s.lastIndex:
		s.truncations = append(s.truncations, truncation{ordinal: ordinal, index: idx})
		s.superseded += int(s.lastIndex - idx + 1)
	case *expect != 0 && idx > *expect:
		s.gaps = append(s.gaps, fmt.Sprintf("entries %d-%d missing before %s at offset %d", *expect, idx-1, it.Segment.Name(), it.Offset))
	}
	s.lastIndex = idx
	s.lastTerm = it.Entry.GetTerm()
	*expect = idx + 1
}

func (s *walScan) addDamage(we *walfmt.Error) {
	if len(s.damage) < maxDamageReports {
		s.damage = append(s.damage, we)
	}
}

// hasSnapshotRecord reports whether the WAL holds a snapshot record at this
// index and term.
func (s *walScan) hasSnapshotRecord(index, term uint64) bool {
	for _, sn := range s.snapshots {
		if sn.Index == index && sn.Term == term {
			return true
		}
	}
	return false
}

// commit is the commit index of the last hard state.
func (s *walScan) commit() uint64 { return s.lastHardState.GetCommit() }

// healthy reports whether the WAL has no damage and no hole in its log.
func (s *walScan) healthy() bool {
	return len(s.damage) == 0 && len(s.gaps) == 0 && s.fatalError == nil
}

// problem describes the first problem found, or "".
func (s *walScan) problem() string {
	switch {
	case s.fatalError != nil:
		return s.fatalError.Error()
	case len(s.damage) > 0:
		return s.damage[0].Error()
	case len(s.gaps) > 0:
		return fmt.Sprintf("wal %s: %v: %s", s.dir, walfmt.ErrEntryGap, s.gaps[0])
	}
	return ""
}

// entryFate tells, on a second pass over the same WAL, whether the entry
// record at each ordinal was superseded. Ordinals must be asked in
// increasing order.
type entryFate struct {
	scan *walScan
	next int // first truncation after the last ordinal asked
}

// superseded reports whether the entry with this ordinal and index was
// replaced by a later entry at or below its index.
func (f *entryFate) superseded(ordinal int, index uint64) bool {
	t := f.scan.truncations
	for f.next < len(t) && t[f.next].ordinal <= ordinal {
		f.next++
	}
	return f.next < len(t) && f.scan.suffixMin[f.next] <= index
}

// walPosition turns a place in a segment into a place in the concatenation
// of all segments, for progress reports.
type walPosition struct {
	starts  map[uint64]int64 // segment sequence → where it starts
	total   int64
	lastSeq uint64
	lastAt  int64
}

func newWALPosition(segs []walfmt.Segment) *walPosition {
	p := &walPosition{starts: make(map[uint64]int64, len(segs))}
	for _, sg := range segs {
		p.starts[sg.Seq] = p.total
		p.total += fileSize(sg.Path)
	}
	return p
}

// at returns where offset off of segment seg is in the concatenation.
func (p *walPosition) at(seg walfmt.Segment, off int64) int64 {
	if seg.Seq != p.lastSeq {
		p.lastSeq, p.lastAt = seg.Seq, p.starts[seg.Seq]
	}
	return p.lastAt + off
}
