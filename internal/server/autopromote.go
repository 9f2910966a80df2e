package server

import (
	"context"

	"github.com/cairnkv/cairn/internal/autopromote"
	"github.com/cairnkv/cairn/internal/featuregate"
)

// startAutoPromote runs the automatic promotion of learners (the gate
// AutoPromoteLearners, internal/autopromote) on every member; it acts only
// while the member leads, through MemberPromote and so its checks.
func (s *Server) startAutoPromote() {
	if !s.cfg.Features.Enabled(featuregate.AutoPromoteLearners) {
		return
	}
	p := autopromote.New(autopromote.Config{Status: s.RaftStatus, MaxLag: s.cfg.SnapshotCount / 10, Timeout: s.RequestTimeout(), Logger: s.log,
		Promote: func(ctx context.Context, id uint64) error { _, err := s.MemberPromote(ctx, id); return err }})
	s.wg.Add(1)
	go func() { defer s.wg.Done(); p.Run(s.stopc) }()
}
