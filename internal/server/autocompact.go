package server

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/autocompact"
	"github.com/cairnkv/cairn/pkg/store"
)

// autoCompactLoop samples the revision on the policy's tick and, on the
// leader, compacts to the revision its retention allows
// (internal/autocompact).
func (s *Server) autoCompactLoop(p autocompact.Policy) {
	defer s.wg.Done()
	t := time.NewTicker(p.Interval())
	defer t.Stop()
	r := autocompact.NewRetention(p)
	for {
		select {
		case <-s.stopc:
			return
		case now := <-t.C:
			target := r.Target(now, s.st().Rev())
			if target <= s.st().CompactRev() || s.leaderID.Load() != s.id {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), s.RequestTimeout())
			_, err := s.ProposeCompaction(ctx, &pb.CompactionRequest{Revision: target}, false)
			cancel()
			if err != nil && err != store.ErrCompacted {
				s.log.Warn("auto compaction failed", "revision", target, "err", err)
			} else if err == nil {
				s.log.Info("auto compaction", "revision", target)
			}
		}
	}
}
