package hashcheck

import "time"

// PeriodicLoop runs PeriodicCheck every interval while leads reports that
// the member leads, until Config.Stop closes.
func (c *Checker) PeriodicLoop(interval time.Duration, leads func() bool) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.cfg.Stop:
			return
		case <-t.C:
		}
		if !leads() {
			continue
		}
		if err := c.PeriodicCheck(); err != nil {
			c.log.Warn("failed to check hash KV", "error", err.Error())
		}
	}
}

// CompactHashLoop runs CompactHashCheck every interval while leads reports
// that the member leads, and notes the store's compaction revision as it
// moves (every second at most) in between, until Config.Stop closes.
func (c *Checker) CompactHashLoop(interval time.Duration, leads func() bool) {
	sample := time.NewTicker(min(interval, time.Second))
	defer sample.Stop()
	check := time.NewTicker(interval)
	defer check.Stop()
	var revs CompactionRevs
	for {
		select {
		case <-c.cfg.Stop:
			return
		case <-sample.C:
			revs.Observe(c.m.Store().CompactRev())
		case <-check.C:
			revs.Observe(c.m.Store().CompactRev())
			if leads() {
				c.CompactHashCheck(&revs)
			}
		}
	}
}
