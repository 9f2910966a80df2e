package server

import (
	"github.com/cairnkv/cairn/pkg/snapfmt"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// purge removes the .snap files beyond --max-snapshots and the WAL
// segments beyond --max-wals, oldest first, once a snapshot has released
// them: a segment after the newest snapshot is never removed, whatever
// their number. 0 keeps every file.
func (s *Server) purge() {
	if n := int(s.cfg.MaxSnapshots); n > 0 {
		removed, err := snapfmt.Purge(s.cfg.SnapDir(), n)
		if err != nil {
			s.log.Warn("failed to purge snap file", "err", err)
		}
		for _, p := range removed {
			s.log.Info("purged", "path", p)
		}
	}
	n := int(s.cfg.MaxWALs)
	if n == 0 {
		return
	}
	segs, err := walfmt.ListSegments(s.cfg.WALPath())
	if err != nil || len(segs) <= n {
		return
	}
	removed, err := s.wal.RemoveSegmentsBefore(min(segs[len(segs)-n].Index, s.snapshotIndex))
	if err != nil {
		s.log.Warn("failed to purge wal file", "err", err)
	}
	for _, p := range removed {
		s.log.Info("purged", "path", p)
	}
}
