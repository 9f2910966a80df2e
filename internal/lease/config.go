package lease

import (
	"time"
)

// MaxLeaseTTL is the largest TTL, in seconds, that Grant accepts (etcd's
// limit: about 285 years).
const MaxLeaseTTL = 9000000000

// TickInterval is how often the server is meant to call Tick and
// CheckpointsDue; the per-call revocation budget assumes it.
const TickInterval = 500 * time.Millisecond

// Defaults of Config, etcd's.
const (
	DefaultCheckpointInterval = 5 * time.Minute
	DefaultRetryInterval      = 3 * time.Second
	DefaultRevokeRate         = 1000
	DefaultCheckpointBatch    = 1000
)

// Config configures a Lessor. Zero fields take the defaults.
type Config struct {
	// MinTTL, in seconds: a grant with a smaller TTL gets this one. The
	// server passes MinTTL(electionTicks, heartbeat); 0 means
	// MinTTL(10, 100ms), etcd's default of 2 seconds.
	MinTTL int64
	// CheckpointInterval is how often the primary checkpoints the remaining
	// TTL of a lease whose TTL is longer than it (etcd's
	// --lease-checkpoint-interval). 0 means DefaultCheckpointInterval; a
	// negative value turns checkpointing off.
	CheckpointInterval time.Duration
	// RetryInterval is how long after Tick offered an expired lease it may
	// offer it again, if it has not been revoked by then.
	RetryInterval time.Duration
	// RevokeRate is the number of expired leases offered per second: Tick
	// offers at most RevokeRate*TickInterval per call, and Promote spreads
	// the expiries of many leases so that they can be revoked at this rate.
	RevokeRate int
	// CheckpointBatch is the most checkpoints one CheckpointsDue returns.
	CheckpointBatch int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// MinTTL returns the smallest lease TTL, in seconds, that lets a lease
// survive a leader election: ceil(1.5 * electionTicks * heartbeat).
func MinTTL(electionTicks int, heartbeat time.Duration) int64 {
	d := 3 * time.Duration(electionTicks) * heartbeat / 2
	return int64((d + time.Second - 1) / time.Second)
}

func (c Config) withDefaults() Config {
	if c.MinTTL <= 0 {
		c.MinTTL = MinTTL(10, 100*time.Millisecond)
	}
	if c.CheckpointInterval == 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
	if c.RetryInterval <= 0 {
		c.RetryInterval = DefaultRetryInterval
	}
	if c.RevokeRate <= 0 {
		c.RevokeRate = DefaultRevokeRate
	}
	if c.CheckpointBatch <= 0 {
		c.CheckpointBatch = DefaultCheckpointBatch
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// revokesPerTick is the most expired leases one Tick offers.
func (c Config) revokesPerTick() int {
	return max(1, int(int64(c.RevokeRate)*int64(TickInterval)/int64(time.Second)))
}
