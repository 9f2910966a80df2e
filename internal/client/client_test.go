package client_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/client/clienttest"
	"github.com/cairnkv/cairn/internal/tlstest"
)

const testTimeout = 20 * time.Second

func newClient(t *testing.T, cfg client.Config) *client.Client {
	t.Helper()
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func put(t *testing.T, ctx context.Context, c *client.Client, key, value string) *pb.PutResponse {
	t.Helper()
	resp, err := c.KV.Put(ctx, &pb.PutRequest{Key: []byte(key), Value: []byte(value)})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return resp
}

func TestPutGetAndServerErrors(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	c := newClient(t, client.Config{Endpoints: cluster.Endpoints()})
	ctx := testContext(t)

	put(t, ctx, c, "k", "v")
	got, err := c.KV.Range(ctx, &pb.RangeRequest{Key: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "v" {
		t.Fatalf("range k = %v, want v", got.Kvs)
	}

	_, err = c.KV.Range(ctx, &pb.RangeRequest{Key: []byte("k"), Revision: 1000})
	if !errors.Is(err, rpctypes.ErrFutureRev) {
		t.Fatalf("range at a future revision: error %v, want %v", err, rpctypes.ErrFutureRev)
	}
}

func TestUnreachableEndpointTimesOutWithContextError(t *testing.T) {
	c := newClient(t, client.Config{Endpoints: []string{"127.0.0.1:1"}, DialTimeout: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := c.KV.Range(ctx, &pb.RangeRequest{Key: []byte("k")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want %v", err, context.DeadlineExceeded)
	}
}

func TestFailoverWhenMemberIsKilled(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{Size: 3})
	c := newClient(t, client.Config{Endpoints: cluster.Endpoints()})
	ctx := testContext(t)

	cluster.Members[0].Kill()
	// If the dead member led, writes fail until a new leader is elected.
	clienttest.Poll(t, testTimeout, "a leader among the survivors", func() bool {
		_, err := c.KV.Put(ctx, &pb.PutRequest{Key: []byte("k")})
		return err == nil
	})
	// Round-robin sends some of these to the dead member first: each must
	// fail over, reads and writes alike (a write that never left is safe).
	for i := range 10 {
		put(t, ctx, c, fmt.Sprintf("k%d", i), "v")
		if _, err := c.KV.Range(ctx, &pb.RangeRequest{Key: []byte("k")}); err != nil {
			t.Fatalf("range after kill: %v", err)
		}
	}
}

func TestForEndpointAddressesOneMember(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{Size: 3})
	c := newClient(t, client.Config{Endpoints: cluster.Endpoints()})
	ctx := testContext(t)

	ids := map[uint64]bool{}
	for _, ep := range c.Endpoints() {
		conn, err := c.ForEndpoint(ep)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := pb.NewMaintenanceClient(conn).Status(ctx, &pb.StatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ids[resp.Header.MemberId] = true
	}
	if len(ids) != 3 {
		t.Fatalf("status of each endpoint came from %d distinct members, want 3", len(ids))
	}
	if _, err := c.ForEndpoint("127.0.0.1:1"); err == nil {
		t.Fatal("ForEndpoint accepted an address that is not an endpoint")
	}
}

func TestSyncReplacesEndpointsWithMemberList(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{Size: 3})
	c := newClient(t, client.Config{Endpoints: cluster.Endpoints()[:1]})
	if err := c.Sync(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if got := len(c.Endpoints()); got != 3 {
		t.Fatalf("after sync: %d endpoints %v, want the 3 members' client URLs", got, c.Endpoints())
	}
}

func TestAuthenticationRenewsRejectedToken(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	ctx := testContext(t)
	anonymous := newClient(t, client.Config{Endpoints: cluster.Endpoints()})
	if _, err := anonymous.Auth.UserAdd(ctx, &pb.AuthUserAddRequest{Name: "root", Password: "secret"}); err != nil {
		t.Fatal(err)
	}
	if _, err := anonymous.Auth.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: "root", Role: "root"}); err != nil {
		t.Fatal(err)
	}
	if _, err := anonymous.Auth.AuthEnable(ctx, &pb.AuthEnableRequest{}); err != nil {
		t.Fatal(err)
	}

	if _, err := anonymous.KV.Put(ctx, &pb.PutRequest{Key: []byte("k")}); !errors.Is(err, rpctypes.ErrUserEmpty) {
		t.Fatalf("put without credentials: error %v, want %v", err, rpctypes.ErrUserEmpty)
	}
	wrong := newClient(t, client.Config{Endpoints: cluster.Endpoints(), Username: "root", Password: "nope"})
	if _, err := wrong.KV.Put(ctx, &pb.PutRequest{Key: []byte("k")}); !errors.Is(err, rpctypes.ErrAuthFailed) {
		t.Fatalf("put with a wrong password: error %v, want %v", err, rpctypes.ErrAuthFailed)
	}

	root := newClient(t, client.Config{Endpoints: cluster.Endpoints(), Username: "root", Password: "secret"})
	put(t, ctx, root, "k", "1")
	// Turning authentication off and on again invalidates every token: the
	// client must notice the rejection and authenticate again by itself.
	if _, err := root.Auth.AuthDisable(ctx, &pb.AuthDisableRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := anonymous.Auth.AuthEnable(ctx, &pb.AuthEnableRequest{}); err != nil {
		t.Fatal(err)
	}
	put(t, ctx, root, "k", "2")
	if _, err := root.KeepAliveOnce(ctx, 1); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Fatalf("keep-alive of a missing lease: error %v, want %v", err, rpctypes.ErrLeaseNotFound)
	}
}

func TestTLS(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	cluster := clienttest.StartCluster(t, clienttest.Options{ClientTLS: &certs})
	ctx := testContext(t)

	tlsConfig := func(files client.TLSFiles) *tls.Config {
		cfg, err := files.Config()
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	verified := client.TLSFiles{CAFile: certs.CAFile, CertFile: certs.ClientCert, KeyFile: certs.ClientKey}
	c := newClient(t, client.Config{Endpoints: cluster.Endpoints(), TLS: tlsConfig(verified)})
	put(t, ctx, c, "k", "v")

	skipVerify := client.TLSFiles{CertFile: certs.ClientCert, KeyFile: certs.ClientKey, InsecureSkipVerify: true}
	c = newClient(t, client.Config{Endpoints: []string{cluster.Members[0].ClientURL}, TLS: tlsConfig(skipVerify)})
	put(t, ctx, c, "k", "v")

	// Without a client certificate, the server refuses the connection.
	anonymous := newClient(t, client.Config{Endpoints: cluster.Endpoints(), TLS: tlsConfig(client.TLSFiles{CAFile: certs.CAFile})})
	shortCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := anonymous.KV.Put(shortCtx, &pb.PutRequest{Key: []byte("k")}); err == nil {
		t.Fatal("put without a client certificate succeeded")
	}

	if _, err := (client.TLSFiles{CertFile: certs.ClientCert}).Config(); err == nil {
		t.Fatal("a certificate without its key was accepted")
	}
}

func TestWatchProgressAndCompaction(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	c := newClient(t, client.Config{Endpoints: cluster.Endpoints()})
	ctx := testContext(t)

	rev := put(t, ctx, c, "k", "1").Header.Revision
	w := c.Watch(ctx, &pb.WatchCreateRequest{Key: []byte("other")})
	// The request may reach the server before the watch is set up: ask
	// until a notification comes.
	var progress client.WatchResponse
	clienttest.Poll(t, testTimeout, "a progress notification", func() bool {
		_ = w.RequestProgress()
		select {
		case progress = <-w.Responses:
			return true
		default:
			return false
		}
	})
	if !progress.IsProgressNotify() || progress.Header.Revision != rev {
		t.Fatalf("response %+v, want a progress notification at revision %d", progress, rev)
	}

	put(t, ctx, c, "k", "2")
	if _, err := c.KV.Compact(ctx, &pb.CompactionRequest{Revision: rev + 1}); err != nil {
		t.Fatal(err)
	}
	old := c.Watch(ctx, &pb.WatchCreateRequest{Key: []byte("k"), StartRevision: rev})
	end, ok := <-old.Responses
	if !ok || !end.Canceled || !errors.Is(end.Err, rpctypes.ErrCompacted) || end.CompactRevision != rev+1 {
		t.Fatalf("watch from a compacted revision: %+v, want cancelled with %v at %d", end, rpctypes.ErrCompacted, rev+1)
	}
	if _, ok := <-old.Responses; ok {
		t.Fatal("watch went on after it was cancelled")
	}
}

func TestKeepAliveEndsWhenLeaseIsRevoked(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	c := newClient(t, client.Config{Endpoints: cluster.Endpoints()})
	ctx := testContext(t)

	lease, err := c.Lease.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 3})
	if err != nil {
		t.Fatal(err)
	}
	renewals := c.KeepAlive(ctx, lease.ID)
	if first, ok := <-renewals; !ok || first.TTL != 3 {
		t.Fatalf("first renewal %v, want TTL 3", first)
	}
	if _, err := c.Lease.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: lease.ID}); err != nil {
		t.Fatal(err)
	}
	// The next renewal, a third of the TTL later, finds the lease gone.
	for range renewals {
	}
	if ctx.Err() != nil {
		t.Fatal("keep-alive still running after its lease was revoked")
	}
}
