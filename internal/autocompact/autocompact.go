// Package autocompact is the auto-compaction policy of --auto-compaction-mode
// and --auto-compaction-retention: in revision mode, keep the last N
// revisions; in periodic mode, keep the history of the last period. It
// parses the flags and, fed the store's revision on each tick, says which
// revision to compact to; the server's loop ticks and proposes the
// compactions on the leader. It runs no goroutine and imports nothing of
// the module.
package autocompact

import (
	"fmt"
	"strconv"
	"time"
)

// Policy is a parsed retention (the zero Policy compacts nothing).
type Policy struct {
	revisions int64         // revision mode
	period    time.Duration // periodic mode
}

// Parse reads --auto-compaction-mode and --auto-compaction-retention.
func Parse(mode, retention string) (Policy, error) {
	if retention == "" || retention == "0" {
		return Policy{}, nil
	}
	switch mode {
	case "revision":
		n, err := strconv.ParseInt(retention, 10, 64)
		if err != nil || n < 0 {
			return Policy{}, fmt.Errorf("--auto-compaction-retention %q: want a number of revisions", retention)
		}
		return Policy{revisions: n}, nil
	case "periodic", "":
		if h, err := strconv.Atoi(retention); err == nil {
			return Policy{period: time.Duration(h) * time.Hour}, nil
		}
		d, err := time.ParseDuration(retention)
		if err != nil || d < 0 {
			return Policy{}, fmt.Errorf("--auto-compaction-retention %q: want hours or a duration such as 30m", retention)
		}
		return Policy{period: d}, nil
	}
	return Policy{}, fmt.Errorf("--auto-compaction-mode %q: want periodic or revision", mode)
}

// Enabled reports whether the policy compacts at all.
func (p Policy) Enabled() bool { return p.revisions > 0 || p.period > 0 }

// Interval is how often to sample the revision: a tenth of the period (a
// second at least), or every 5 minutes in revision mode.
func (p Policy) Interval() time.Duration {
	if p.period > 0 {
		return max(p.period/10, time.Second)
	}
	return 5 * time.Minute
}

// Retention applies a policy to the revisions sampled on each tick.
type Retention struct {
	policy  Policy
	samples []sample
}

type sample struct {
	at  time.Time
	rev int64
}

// NewRetention starts with no samples.
func NewRetention(p Policy) *Retention { return &Retention{policy: p} }

// Target notes the store's revision at now and returns the revision the
// policy allows to compact to (0: none yet): rev less the revisions kept,
// or the newest revision sampled a whole period ago.
func (r *Retention) Target(now time.Time, rev int64) int64 {
	r.samples = append(r.samples, sample{now, rev})
	if r.policy.revisions > 0 {
		return rev - r.policy.revisions
	}
	target := int64(0)
	for len(r.samples) > 0 && now.Sub(r.samples[0].at) >= r.policy.period {
		target = r.samples[0].rev
		r.samples = r.samples[1:]
	}
	return target
}
