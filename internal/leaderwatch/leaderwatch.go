// Package leaderwatch tells a member's waiters about its leader: that it
// changed (linearizable reads that must ask again, raft steps to end), and
// that the member has been without one for longer than an election should
// take (the streams of clients that require a leader end then). The server
// feeds it the leader raft reports. It holds timers, no goroutine, and
// imports nothing of the module.
package leaderwatch

import (
	"context"
	"sync"
	"time"
)

// Watch is what a member knows of its leader's changes. It is safe for
// concurrent use.
type Watch struct {
	grace time.Duration

	mu sync.Mutex
	// changed is cancelled at the next leader change (or at stop), then
	// renewed.
	changed       context.Context
	cancelChanged context.CancelFunc
	long          chan struct{} // closed once leaderless for grace; renewed when a leader is known
	timer         *time.Timer   // runs while there is no leader and long is open
	noLeader      bool
	lead          uint64
	elected       time.Time // when lead became known; zero before the first leader
}

// New starts without a leader, as a member does; Lost closes once there
// has been none for grace.
func New(grace time.Duration) *Watch {
	l := &Watch{grace: grace, long: make(chan struct{})}
	l.changed, l.cancelChanged = context.WithCancel(context.Background())
	l.Set(0)
	return l
}

// Set records the leader raft reports (0: none).
func (l *Watch) Set(lead uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cancelChanged()
	l.changed, l.cancelChanged = context.WithCancel(context.Background())
	if lead != 0 && lead != l.lead {
		l.elected = time.Now()
	}
	l.lead = lead
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

// Elected returns when the member learnt of its current leader, or of the
// last one it had when it has none now; zero if it never had one.
func (l *Watch) Elected() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.elected
}

// Changed is closed at the next change of leader.
func (l *Watch) Changed() <-chan struct{} { return l.UntilChange().Done() }

// UntilChange is a context cancelled at the next change of leader, or at
// Stop.
func (l *Watch) UntilChange() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Lost is closed once the member has been without a leader for the grace
// period, and stays closed until it knows one again (then a new channel is
// open).
func (l *Watch) Lost() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.long
}

// Stop cancels UntilChange's context and the timer, when the member stops.
func (l *Watch) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cancelChanged()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}
