// Package autopromote promotes learners automatically (cairn's feature
// gate AutoPromoteLearners): on the leader, a learner is promoted to a
// voter as soon as its log has caught up, by the same request as
// `member promote`; while it has not, the check is repeated on each tick.
//
// The package runs no goroutine of its own and imports nothing of the
// module: the server gives it the raft status and its promote request,
// and runs Run in a goroutine it owns. Every member runs the loop; it acts
// only while the member leads, so a new leader takes over by itself.
package autopromote

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"go.etcd.io/raft/v3"
)

// CaughtUp is the rule `member promote` applies to a learner's log (etcd's):
// the learner has acknowledged some of the log (one that has acknowledged
// nothing is not running at all) and lags the leader by at most maxLag
// entries.
func CaughtUp(learnerMatch, leaderMatch, maxLag uint64) bool {
	return learnerMatch > 0 && leaderMatch <= learnerMatch+maxLag
}

// Config is what the loop is given by the member.
type Config struct {
	// Status is the member's raft status; on the leader it has the
	// progress of every follower and learner.
	Status func() raft.Status
	// Promote is the member's `member promote`: it checks the learner
	// again (membership, log, the strict reconfiguration check) and
	// proposes the conf change through raft.
	Promote func(ctx context.Context, id uint64) error
	// MaxLag is how many entries behind the leader a learner may be and
	// still be promoted (CaughtUp).
	MaxLag uint64
	// Interval is the time between two checks (a second if 0).
	Interval time.Duration
	// Timeout bounds one promotion request (10 s if 0).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Promoter remembers, per learner, what it last reported about it, so
// that a learner which stays behind (or a promotion which keeps failing
// for the same reason) is logged once, not on every tick.
type Promoter struct {
	cfg      Config
	reported map[uint64]string
}

// New returns a promoter with the configuration's defaults filled in.
func New(cfg Config) *Promoter {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Promoter{cfg: cfg, reported: map[uint64]string{}}
}

// Step makes one check: on the leader, each learner that has caught up is
// promoted. It returns the learners promoted. Off the leader it does
// nothing but one status call, which is what makes the loop cheap.
func (p *Promoter) Step(ctx context.Context) []uint64 {
	st := p.cfg.Status()
	if st.RaftState != raft.StateLeader {
		clear(p.reported) // a later leadership starts afresh
		return nil
	}
	leaderMatch := st.Progress[st.ID].Match
	var learners []uint64
	for id, pr := range st.Progress {
		if pr.IsLearner {
			learners = append(learners, id)
		}
	}
	sort.Slice(learners, func(i, j int) bool { return learners[i] < learners[j] })
	for id := range p.reported {
		if _, ok := st.Progress[id]; !ok || !st.Progress[id].IsLearner {
			delete(p.reported, id) // promoted or removed
		}
	}
	var promoted []uint64
	for _, id := range learners {
		match := st.Progress[id].Match
		if !CaughtUp(match, leaderMatch, p.cfg.MaxLag) {
			reason := "behind the leader"
			if match == 0 {
				reason = "has not acknowledged any entry (not started?)"
			}
			p.report(id, reason, slog.LevelInfo, "learner not ready for automatic promotion",
				"learner-match", match, "leader-match", leaderMatch, "max-lag", p.cfg.MaxLag)
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
		err := p.cfg.Promote(pctx, id)
		cancel()
		if err != nil {
			// Refused (the strict reconfiguration check, a lost
			// leadership, a learner that fell behind again): try again
			// on the next tick.
			p.report(id, err.Error(), slog.LevelWarn, "automatic promotion of learner failed")
			continue
		}
		delete(p.reported, id)
		promoted = append(promoted, id)
		p.cfg.Logger.Info("promoted learner automatically", "learner-id", fmt.Sprintf("%x", id),
			"learner-match", match, "leader-match", leaderMatch, "max-lag", p.cfg.MaxLag)
	}
	return promoted
}

// report logs msg about a learner unless the last report was for the
// same reason.
func (p *Promoter) report(id uint64, reason string, level slog.Level, msg string, args ...any) {
	if p.reported[id] == reason {
		return
	}
	p.reported[id] = reason
	args = append([]any{"learner-id", fmt.Sprintf("%x", id), "reason", reason}, args...)
	p.cfg.Logger.Log(context.Background(), level, msg, args...)
}

// Run calls Step on every tick until stop is closed. A promotion in
// flight is not cancelled by stop: the member's promote request ends by
// itself when the member stops.
func (p *Promoter) Run(stop <-chan struct{}) {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.Step(context.Background())
		}
	}
}
