// Package client is cairn's client for etcd v3 clusters (cairn's or etcd's):
// one gRPC connection per endpoint, round-robin over the healthy ones with
// failover, retries where they are safe, resumable watches and lease
// keep-alives, token authentication and TLS.
package client

import (
	"context"
	"fmt"
	"slices"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// Client is a connection to a cluster. Its service clients send each call
// to a healthy member; use ForEndpoint to address one member.
type Client struct {
	KV          pb.KVClient
	Lease       pb.LeaseClient
	Cluster     pb.ClusterClient
	Maintenance pb.MaintenanceClient
	Auth        pb.AuthClient

	cfg      Config
	balancer *balancer
	router   *router
	health   *health // nil when the health probe is disabled

	stop context.CancelFunc
	bg   sync.WaitGroup
}

// New connects to the endpoints of cfg. Connections are made in the
// background: New fails only on a malformed configuration.
func New(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	b, err := newBalancer(cfg)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	var h *health
	if cfg.HealthProbeInterval > 0 {
		h = &health{cfg: cfg, balancer: b, ctx: ctx}
		b.ready = make(chan struct{})
	}
	r := &router{balancer: b, health: h, log: cfg.Logger}
	r.auth = newAuthenticator(cfg, r)
	c := &Client{
		KV:          pb.NewKVClient(r),
		Lease:       pb.NewLeaseClient(r),
		Cluster:     pb.NewClusterClient(r),
		Maintenance: pb.NewMaintenanceClient(r),
		Auth:        pb.NewAuthClient(r),
		cfg:         cfg,
		balancer:    b,
		router:      r,
		health:      h,
		stop:        stop,
	}
	if h != nil {
		c.bg.Go(h.run)
	}
	if cfg.AutoSyncInterval > 0 {
		c.bg.Go(func() { c.autoSyncLoop(ctx) })
	}
	return c, nil
}

// Close stops background work and closes every connection.
func (c *Client) Close() error {
	c.stop()
	c.bg.Wait()
	if c.health != nil {
		c.health.close()
	}
	c.balancer.close()
	return nil
}

// Conn is the connection behind the service clients, for calls the
// Client has no field for (a proxy's Election, Lock and streams): each
// call goes to a healthy member, with the client's authentication and
// retries.
func (c *Client) Conn() grpc.ClientConnInterface { return c.router }

// Endpoints returns the current endpoint list.
func (c *Client) Endpoints() []string {
	var addrs []string
	for _, e := range c.balancer.list() {
		addrs = append(addrs, e.addr)
	}
	return addrs
}

// SetEndpoints replaces the endpoint list; connections to endpoints that
// stay are kept. New endpoints are probed at once; until they answer, the
// balancer prefers the endpoints known to be healthy.
func (c *Client) SetEndpoints(addrs ...string) error {
	fresh, err := c.balancer.setEndpoints(addrs)
	if err != nil {
		return err
	}
	if c.health != nil {
		for _, e := range fresh {
			c.health.probeAsync(e, nil)
		}
	}
	return nil
}

// ForEndpoint returns a connection that sends every call to the member at
// addr, which must be one of the client's endpoints, with the client's
// authentication and retries.
func (c *Client) ForEndpoint(addr string) (grpc.ClientConnInterface, error) {
	e := c.balancer.find(addr)
	if e == nil {
		return nil, fmt.Errorf("%q is not one of the client's endpoints %v", addr, c.Endpoints())
	}
	return &router{balancer: c.balancer, health: c.health, auth: c.router.auth, fixed: e, log: c.cfg.Logger}, nil
}

// Sync replaces the endpoints with the client URLs of the cluster's voting
// members, as the member list reports them. Learners are left out: they
// serve few requests.
func (c *Client) Sync(ctx context.Context) error {
	resp, err := c.Cluster.MemberList(ctx, &pb.MemberListRequest{Linearizable: true})
	if err != nil {
		return err
	}
	var addrs []string
	for _, m := range resp.GetMembers() {
		if !m.GetIsLearner() {
			addrs = append(addrs, m.GetClientURLs()...)
		}
	}
	if len(addrs) == 0 || slices.Equal(addrs, c.Endpoints()) {
		return nil
	}
	return c.SetEndpoints(addrs...)
}

func (c *Client) autoSyncLoop(ctx context.Context) {
	every(ctx, c.cfg.AutoSyncInterval, func() {
		syncCtx, cancel := context.WithTimeout(ctx, c.cfg.AutoSyncInterval)
		defer cancel()
		if err := c.Sync(syncCtx); err != nil {
			c.cfg.Logger.Debug("endpoint auto-sync failed", "error", err)
		}
	})
}
