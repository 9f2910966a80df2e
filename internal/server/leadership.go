package server

import (
	"context"
	"sync"
	"time"
)

// leaderless tells the member's waiters that it has no leader: linearizable
// reads that must ask again, and the streams of clients that require a
// leader (internal/api), which end once the member has been without one for
// longer than an election should take.
type leaderless struct {
	grace time.Duration

	mu sync.Mutex
	// changed is cancelled at the next leader change (or at stop), then
	// renewed.
	changed       context.Context
	cancelChanged context.CancelFunc
	long          chan struct{} // closed once leaderless for grace; renewed when a leader is known
	timer         *time.Timer   // runs while there is no leader and long is open
	noLeader      bool
}

// newLeaderless starts without a leader, as a member does.
func newLeaderless(grace time.Duration) *leaderless {
	l := &leaderless{grace: grace, long: make(chan struct{})}
	l.changed, l.cancelChanged = context.WithCancel(context.Background())
	l.set(0)
	return l
}

// set records the leader raft reports (0: none).
func (l *leaderless) set(lead uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cancelChanged()
	l.changed, l.cancelChanged = context.WithCancel(context.Background())
	if lead != 0 {
		l.noLeader = false
		if l.timer != nil {
			l.timer.Stop()
			l.timer = nil
		}
		select {
		case <-l.long:
			l.long = make(chan struct{})
		default:
		}
		return
	}
	if l.noLeader {
		return // still without one
	}
	l.noLeader = true
	long := l.long
	l.timer = time.AfterFunc(l.grace, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.long == long && l.noLeader {
			close(long)
			l.timer = nil
		}
	})
}

// leaderChange is closed at the next change of leader.
func (l *leaderless) leaderChange() <-chan struct{} { return l.untilChange().Done() }

// untilChange is a context cancelled at the next change of leader, or when
// the member stops.
func (l *leaderless) untilChange() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// lost is closed once the member has been without a leader for the grace
// period, and stays closed until it knows one again.
func (l *leaderless) lost() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.long
}

func (l *leaderless) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cancelChanged()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}

// LeaderLost returns a channel closed once this member has been without a
// leader for two election timeouts (an election takes less), and open again
// (a new channel) once it has one: a stream that requires a leader ends
// when it closes, so that its client moves to a member that has one.
func (s *Server) LeaderLost() <-chan struct{} { return s.leaderless.lost() }
