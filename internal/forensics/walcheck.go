package forensics

import (
	"path/filepath"

	"github.com/cairnkv/cairn/pkg/walfmt"
)

// WALCheck is what `wal verify` finds in the WAL of a data directory, for
// the tools of other packages (diagnose) that must judge a WAL the way
// wal verify does without printing its report.
type WALCheck struct {
	// Dir is the WAL directory.
	Dir string
	// Segments is the number of segment files.
	Segments int
	// NodeID and ClusterID are from the first metadata record; HasMetadata
	// says whether there was one.
	NodeID, ClusterID uint64
	HasMetadata       bool
	// FirstIndex, LastIndex and LastTerm describe the raft log: the lowest
	// entry index, the index of the last entry (or of a later snapshot
	// record) and the term of the last entry record.
	FirstIndex, LastIndex, LastTerm uint64
	Entries, Superseded             int
	// Commit, Term and Vote are the last hard state's.
	Commit, Term, Vote uint64
	// SnapshotIndex is the index of the last snapshot record of the WAL.
	SnapshotIndex uint64
	// SnapFileIndex is the index of the newest .snap file that reads
	// (0: none).
	SnapFileIndex uint64
	// Problems are the damage found, as wal verify lists it: frames, CRC
	// chain, holes in the log (a missing segment), snap files.
	Problems []string
	// TornTailOnly says that the only damage is at the end of the last
	// segment, as a crash mid-write leaves it (wal repair can cut it).
	TornTailOnly bool
}

// Healthy says whether no problem was found.
func (c *WALCheck) Healthy() bool { return len(c.Problems) == 0 }

// CheckWAL reads the WAL of arg (a data directory, its member directory or
// a WAL directory) read-only, as wal verify does. Damage is reported in
// the result, not as an error; the error is for a WAL that cannot be read
// at all (no such directory, no segments).
func CheckWAL(arg string) (*WALCheck, error) {
	dir, err := resolveWALDir(arg)
	if err != nil {
		return nil, err
	}
	s, err := scanWAL(dir, nil)
	if err != nil {
		return nil, err
	}
	snaps := checkSnapFiles(filepath.Join(filepath.Dir(dir), snapDirName), s)
	c := &WALCheck{Dir: dir, Segments: len(s.segments), FirstIndex: s.firstIndex, LastIndex: s.lastIndex, LastTerm: s.lastTerm,
		Entries: s.entries, Superseded: s.superseded, Commit: s.commit(),
		Term: s.lastHardState.GetTerm(), Vote: s.lastHardState.GetVote(), TornTailOnly: tornTailOnly(s)}
	if s.metadata != nil {
		c.NodeID, c.ClusterID, c.HasMetadata = s.metadata.GetNodeID(), s.metadata.GetClusterID(), true
	}
	if s.lastSnapshot != nil {
		c.SnapshotIndex = s.lastSnapshot.Index
	}
	if snaps.newest != nil {
		c.SnapFileIndex = snaps.newest.Index
	}
	if s.fatalError != nil {
		c.Problems = append(c.Problems, s.fatalError.Error())
	}
	for _, d := range s.damage {
		c.Problems = append(c.Problems, d.Error())
	}
	for _, g := range s.gaps {
		c.Problems = append(c.Problems, walfmt.ErrEntryGap.Error()+": "+g)
	}
	c.Problems = append(c.Problems, snaps.problems...)
	return c, nil
}
