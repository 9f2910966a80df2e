package server

import (
	"time"

	"github.com/cairnkv/cairn/internal/leaderwatch"
)

// leaderless tells the member's waiters about its leader's changes
// (internal/leaderwatch).
type leaderless = leaderwatch.Watch

// newLeaderless starts without a leader, as a member does.
func newLeaderless(grace time.Duration) *leaderless { return leaderwatch.New(grace) }

// LeaderLost returns a channel closed once this member has been without a
// leader for two election timeouts (an election takes less), and open again
// (a new channel) once it has one: a stream that requires a leader ends
// when it closes, so that its client moves to a member that has one.
func (s *Server) LeaderLost() <-chan struct{} { return s.leaderless.Lost() }
