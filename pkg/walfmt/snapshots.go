package walfmt

import (
	"errors"
	"io"
)

// ValidSnapshots returns the snapshot records of the WAL in dir that a
// member may restart from, oldest first: those read before any damage, at
// or below the commit index of the last hard state (a snapshot record
// written after its .snap file but whose hard state never reached the WAL
// is not one). The empty snapshot a WAL starts with is among them.
//
// A .snap file that no valid record names was written by a member that
// crashed before it recorded the snapshot in its WAL; it must be passed over.
func ValidSnapshots(dir string) ([]Snapshot, error) {
	d, err := OpenDecoder(dir, DecoderOptions{SkipEntries: true})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var snaps []Snapshot
	var commit uint64
	for {
		it, err := d.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			break // nothing after damage is trusted
		}
		switch {
		case it.Snapshot != nil:
			snaps = append(snaps, *it.Snapshot)
		case it.HardState != nil:
			commit = it.HardState.GetCommit()
		}
	}
	valid := snaps[:0]
	for _, s := range snaps {
		if s.Index <= commit {
			valid = append(valid, s)
		}
	}
	return valid, nil
}
