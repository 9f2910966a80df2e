package forensics

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cairnkv/cairn/pkg/snapfmt"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// snapCheck is what `wal verify` finds in the snap directory next to the
// WAL: the raft snapshots a restart starts from.
type snapCheck struct {
	dir      string
	files    int
	newest   *snapfmt.File // newest file that reads
	problems []string
}

// checkSnapFiles reads every .snap file of dir (the directory may be
// absent: a member that never took a snapshot has none) and checks that
// the newest valid one has its snapshot record in the WAL, since a
// restarting member replays the WAL from there.
func checkSnapFiles(dir string, wal *walScan) *snapCheck {
	c := &snapCheck{dir: dir}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return c
	}
	files, skipped, err := snapfmt.List(dir)
	if err != nil {
		c.problems = append(c.problems, fmt.Sprintf("snap dir %s: %v", dir, err))
		return c
	}
	for _, s := range skipped {
		c.problems = append(c.problems, fmt.Sprintf("snap file %s: %v", s.Path, s.Err))
	}
	c.files = len(files) + len(skipped)
	for i := range files {
		f := files[i]
		if _, err := snapfmt.Read(f.Path); err != nil {
			c.problems = append(c.problems, err.Error())
			continue
		}
		c.newest = &f
	}
	if c.newest != nil && wal != nil && !wal.hasSnapshotRecord(c.newest.Index, c.newest.Term) {
		c.problems = append(c.problems, fmt.Sprintf("snap file %s: the WAL has no snapshot record at index %d term %d (%v)",
			filepath.Base(c.newest.Path), c.newest.Index, c.newest.Term, walfmt.ErrSnapshotNotFound))
	}
	return c
}

// healthy reports whether every snap file reads.
func (c *snapCheck) healthy() bool { return len(c.problems) == 0 }

// text summarises the check on one line.
func (c *snapCheck) text() string {
	switch {
	case c.files == 0:
		return "none"
	case c.newest == nil:
		return fmt.Sprintf("%d file(s), none valid", c.files)
	}
	return fmt.Sprintf("%d file(s), newest valid: %s (term %d, index %d)", c.files, filepath.Base(c.newest.Path), c.newest.Term, c.newest.Index)
}
