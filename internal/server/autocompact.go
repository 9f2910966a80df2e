package server

import (
	"context"
	"fmt"
	"strconv"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/pkg/store"
)

// autoCompaction is --auto-compaction-mode and --auto-compaction-retention:
// in revision mode, keep the last N revisions; in periodic mode, keep the
// history of the last period. The leader proposes the compactions.
type autoCompaction struct {
	revisions int64         // revision mode
	period    time.Duration // periodic mode
}

func parseAutoCompaction(mode, retention string) (autoCompaction, error) {
	if retention == "" || retention == "0" {
		return autoCompaction{}, nil
	}
	switch mode {
	case "revision":
		n, err := strconv.ParseInt(retention, 10, 64)
		if err != nil || n < 0 {
			return autoCompaction{}, fmt.Errorf("--auto-compaction-retention %q: want a number of revisions", retention)
		}
		return autoCompaction{revisions: n}, nil
	case "periodic", "":
		if h, err := strconv.Atoi(retention); err == nil {
			return autoCompaction{period: time.Duration(h) * time.Hour}, nil
		}
		d, err := time.ParseDuration(retention)
		if err != nil || d < 0 {
			return autoCompaction{}, fmt.Errorf("--auto-compaction-retention %q: want hours or a duration such as 30m", retention)
		}
		return autoCompaction{period: d}, nil
	}
	return autoCompaction{}, fmt.Errorf("--auto-compaction-mode %q: want periodic or revision", mode)
}

func (a autoCompaction) enabled() bool { return a.revisions > 0 || a.period > 0 }

// autoCompactLoop samples the revision on a tick and, on the leader,
// compacts to the revision the retention allows.
func (s *Server) autoCompactLoop(ac autoCompaction) {
	defer s.wg.Done()
	interval := 5 * time.Minute
	if ac.period > 0 {
		interval = max(ac.period/10, time.Second)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	type sample struct {
		at  time.Time
		rev int64
	}
	var samples []sample
	for {
		select {
		case <-s.stopc:
			return
		case now := <-t.C:
			rev := s.st().Rev()
			samples = append(samples, sample{now, rev})
			target := int64(0)
			if ac.revisions > 0 {
				target = rev - ac.revisions
			} else {
				for len(samples) > 0 && now.Sub(samples[0].at) >= ac.period {
					target = samples[0].rev
					samples = samples[1:]
				}
			}
			if target <= s.st().CompactRev() || s.leaderID.Load() != s.id {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), s.requestTimeout())
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
