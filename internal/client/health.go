package client

import (
	"context"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// probeLoop checks every endpoint at each interval and takes out of
// rotation those that cannot serve: unreachable, without a leader (cut off
// from the quorum), or learners.
func (c *Client) probeLoop(ctx context.Context) {
	every(ctx, c.cfg.HealthProbeInterval, func() {
		var wg sync.WaitGroup
		for _, e := range c.balancer.list() {
			wg.Go(func() { c.probe(ctx, e) })
		}
		wg.Wait()
	})
}

// probe asks one member for its status, which it answers from its own state
// without consulting the others, and records the verdict.
func (c *Client) probe(ctx context.Context, e *endpoint) {
	probeCtx, cancel := context.WithTimeout(ctx, c.cfg.HealthProbeInterval)
	defer cancel()
	resp, err := pb.NewMaintenanceClient(e.conn).Status(probeCtx, &pb.StatusRequest{})
	if ctx.Err() != nil {
		return
	}
	healthy := err == nil && resp.GetLeader() != 0 && !resp.GetIsLearner()
	if healthy != e.probeOK.Load() {
		c.cfg.Logger.Debug("endpoint health changed", "endpoint", e.addr, "healthy", healthy,
			"error", err, "leader", resp.GetLeader(), "learner", resp.GetIsLearner())
	}
	e.setProbeResult(healthy)
}

// every calls f at each interval until ctx is done.
func every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
