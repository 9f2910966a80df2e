package autopromote

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
)

func TestCaughtUp(t *testing.T) {
	for _, c := range []struct {
		learner, leader, maxLag uint64
		want                    bool
	}{
		{0, 0, 10, false},   // nothing acknowledged: not running
		{0, 5, 10, false},   // within the lag, but not running
		{1, 11, 10, true},   // exactly maxLag behind
		{1, 12, 10, false},  // one more
		{50, 50, 0, true},   // level
		{100, 90, 10, true}, // a leader's match below the learner's (a new leader): caught up
	} {
		if got := CaughtUp(c.learner, c.leader, c.maxLag); got != c.want {
			t.Errorf("CaughtUp(%d, %d, %d) = %v, want %v", c.learner, c.leader, c.maxLag, got, c.want)
		}
	}
}

// fake is a member whose raft status the test sets; it records the
// promote calls and answers them with err.
type fake struct {
	st       raft.Status
	promoted []uint64
	err      error
}

func (f *fake) status() raft.Status { return f.st }

func (f *fake) promote(ctx context.Context, id uint64) error {
	if _, ok := ctx.Deadline(); !ok {
		return errors.New("promote called without a deadline")
	}
	f.promoted = append(f.promoted, id)
	if f.err != nil {
		return f.err
	}
	pr := f.st.Progress[id]
	pr.IsLearner = false // as applying the conf change does
	f.st.Progress[id] = pr
	return nil
}

// leaderOf: member 1 leads at index leaderMatch, with voter 2 and the
// learners given (ID -> match).
func leaderOf(leaderMatch uint64, learners map[uint64]uint64) raft.Status {
	st := raft.Status{Progress: map[uint64]tracker.Progress{1: {Match: leaderMatch}, 2: {Match: leaderMatch}}}
	st.ID, st.RaftState = 1, raft.StateLeader
	for id, m := range learners {
		st.Progress[id] = tracker.Progress{Match: m, IsLearner: true}
	}
	return st
}

func newTest(f *fake) (*Promoter, *bytes.Buffer) {
	var log bytes.Buffer
	return New(Config{Status: f.status, Promote: f.promote, MaxLag: 10, Logger: slog.New(slog.NewTextHandler(&log, nil))}), &log
}

func TestFollowerDoesNothing(t *testing.T) {
	f := &fake{st: leaderOf(100, map[uint64]uint64{3: 100})}
	f.st.RaftState = raft.StateFollower
	p, log := newTest(f)
	if got := p.Step(context.Background()); got != nil || f.promoted != nil {
		t.Fatalf("a follower promoted %v (calls %v)", got, f.promoted)
	}
	if log.Len() != 0 {
		t.Errorf("a follower logged: %s", log)
	}
}

// TestBehindThenCaughtUp: a learner not started, then far behind, is not
// promoted and is reported once per reason; once within the lag it is
// promoted, once, with the log line.
func TestBehindThenCaughtUp(t *testing.T) {
	f := &fake{st: leaderOf(500, map[uint64]uint64{3: 0})}
	p, log := newTest(f)
	for range 3 {
		if got := p.Step(context.Background()); got != nil {
			t.Fatalf("promoted %v with match 0", got)
		}
	}
	if n := strings.Count(log.String(), "learner not ready for automatic promotion"); n != 1 {
		t.Errorf("reported %d times, want once:\n%s", n, log)
	}
	f.st.Progress[3] = tracker.Progress{Match: 489, IsLearner: true} // 11 behind
	for range 3 {
		if got := p.Step(context.Background()); got != nil {
			t.Fatalf("promoted %v 11 entries behind with a lag of 10", got)
		}
	}
	if n := strings.Count(log.String(), "reason=\"behind the leader\""); n != 1 {
		t.Errorf("behind reported %d times, want once:\n%s", n, log)
	}
	if f.promoted != nil {
		t.Fatalf("promote called for a learner behind: %v", f.promoted)
	}
	f.st.Progress[3] = tracker.Progress{Match: 490, IsLearner: true}
	if got := p.Step(context.Background()); len(got) != 1 || got[0] != 3 {
		t.Fatalf("promoted %v, want [3]", got)
	}
	if !strings.Contains(log.String(), `msg="promoted learner automatically" learner-id=3 learner-match=490 leader-match=500`) {
		t.Errorf("no promotion line:\n%s", log)
	}
	// A voter now: never promoted again, and voters never were.
	p.Step(context.Background())
	if len(f.promoted) != 1 {
		t.Errorf("promote calls %v, want [3]", f.promoted)
	}
}

// TestRefusedIsRetried: a promotion refused (the strict reconfiguration
// check, say) is tried again on the next step, and logged once.
func TestRefusedIsRetried(t *testing.T) {
	f := &fake{st: leaderOf(100, map[uint64]uint64{3: 100, 4: 95}), err: errors.New("etcdserver: unhealthy cluster")}
	p, log := newTest(f)
	p.Step(context.Background())
	p.Step(context.Background())
	if len(f.promoted) != 4 {
		t.Fatalf("promote calls %v, want each learner twice", f.promoted)
	}
	if n := strings.Count(log.String(), "automatic promotion of learner failed"); n != 2 {
		t.Errorf("failure logged %d times, want once per learner:\n%s", n, log)
	}
	f.err = nil
	if got := p.Step(context.Background()); len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Errorf("promoted %v, want [3 4]", got)
	}
}

// TestNewLeadership: leadership lost and regained starts the reports
// afresh.
func TestNewLeadership(t *testing.T) {
	f := &fake{st: leaderOf(100, map[uint64]uint64{3: 0})}
	p, log := newTest(f)
	p.Step(context.Background())
	f.st.RaftState = raft.StateFollower
	p.Step(context.Background())
	f.st.RaftState = raft.StateLeader
	p.Step(context.Background())
	if n := strings.Count(log.String(), "learner not ready"); n != 2 {
		t.Errorf("reported %d times, want once per leadership:\n%s", n, log)
	}
}

// promoteChan is a member whose promote calls go to a channel.
type promoteChan struct {
	st    raft.Status
	calls chan uint64
}

func (c *promoteChan) promote(_ context.Context, id uint64) error {
	c.calls <- id
	return errors.New("refused")
}

// TestRun: the loop checks on each tick and ends when stop is closed.
func TestRun(t *testing.T) {
	c := &promoteChan{st: leaderOf(10, map[uint64]uint64{3: 10}), calls: make(chan uint64)}
	p := New(Config{Status: func() raft.Status { return c.st }, Promote: c.promote, MaxLag: 1, Interval: time.Millisecond})
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { p.Run(stop); close(done) }()
	for range 3 { // refused, so tried again on each tick
		if id := <-c.calls; id != 3 {
			t.Fatalf("promote(%d), want 3", id)
		}
	}
	close(stop)
	for {
		select {
		case <-c.calls: // a tick that raced with stop
		case <-done:
			return
		}
	}
}
