package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestGRPCProxyRangeCache: the proxy answers repeated serializable reads
// without asking the member, drops an answer when its key changes in the
// cluster (through any client, at once when through the proxy), passes linearizable reads on, and never
// answers a user from the cache: with auth on, a user without permission
// is refused what a read without a token had cached.
func TestGRPCProxyRangeCache(t *testing.T) {
	ms := newCluster(t, 1, clusterOptions{})
	_, addr := startProxy(t, "--endpoints", ms[0].curl)
	cli := proxyClient(t, addr, clientv3.Config{})
	direct := client(t, ms...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := direct.Put(ctx, "k", "1"); err != nil {
		t.Fatal(err)
	}
	get := func(want string, opts ...clientv3.OpOption) {
		t.Helper()
		resp, err := cli.Get(ctx, "k", opts...)
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != want {
			t.Fatalf("get k: %v %v, want %s", resp, err, want)
		}
	}
	memberRanges := func() float64 {
		return gauge(t, ms[0].curl, "grpc_server_handled_total", "grpc_method", "Range")
	}
	// The cache keeps answers once its watch has started.
	waitFor(t, 10*time.Second, "an answer in the cache", func() bool {
		get("1", clientv3.WithSerializable())
		return gauge(t, addr, "etcd_grpc_proxy_cache_keys_total") == 1
	})
	before, hits := memberRanges(), gauge(t, addr, "etcd_grpc_proxy_cache_hits_total")
	for range 50 {
		get("1", clientv3.WithSerializable())
	}
	if got := memberRanges() - before; got != 0 {
		t.Errorf("50 cached reads cost the member %v reads", got)
	}
	if got := gauge(t, addr, "etcd_grpc_proxy_cache_hits_total") - hits; got != 50 {
		t.Errorf("%v cache hits, want 50", got)
	}
	get("1")
	if got := memberRanges() - before; got != 1 {
		t.Errorf("a linearizable read cost the member %v reads, want 1", got)
	}

	// A write through the proxy is read back from it at once.
	if _, err := cli.Put(ctx, "k", "1b"); err != nil {
		t.Fatal(err)
	}
	get("1b", clientv3.WithSerializable())

	// A write the proxy does not see drops the answer: its watch does.
	waitFor(t, 10*time.Second, "the answer cached again", func() bool {
		get("1b", clientv3.WithSerializable())
		return gauge(t, addr, "etcd_grpc_proxy_cache_keys_total") == 1
	})
	if _, err := direct.Put(ctx, "k", "2"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the changed key's answer dropped", func() bool {
		return gauge(t, addr, "etcd_grpc_proxy_cache_keys_total") == 0
	})
	get("2", clientv3.WithSerializable())

	// Auth on: bob, who may read nothing, is refused k although a read
	// without a token has it in the cache.
	waitFor(t, 10*time.Second, "k cached again", func() bool {
		get("2", clientv3.WithSerializable())
		return gauge(t, addr, "etcd_grpc_proxy_cache_keys_total") == 1
	})
	for _, step := range []func() error{
		func() error { _, err := direct.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := direct.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := direct.UserAdd(ctx, "bob", "pw"); return err },
		func() error { _, err := direct.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	bob := proxyClient(t, addr, clientv3.Config{Username: "bob", Password: "pw"})
	if _, err := bob.Get(ctx, "k", clientv3.WithSerializable()); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("bob's read of k: %v, want %v", err, rpctypes.ErrPermissionDenied)
	}
	// A read without a token is refused once the cached answer is older
	// than the cache's bound.
	waitFor(t, 10*time.Second, "a read without a token refused", func() bool {
		_, err := cli.Get(ctx, "k", clientv3.WithSerializable())
		return errors.Is(err, rpctypes.ErrUserEmpty)
	})
}
