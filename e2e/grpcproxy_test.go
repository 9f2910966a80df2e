package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/cairnkv/cairn/internal/testnet"
	"github.com/cairnkv/cairn/internal/tlstest"
)

// startProxy runs `cairn grpc-proxy start` on a free port with args and
// waits for its ready line; it returns the process and the address.
func startProxy(t *testing.T, args ...string) (*member, string) {
	t.Helper()
	addr := testnet.FreeAddr(t)
	p := &member{t: t, name: "proxy", args: append([]string{"grpc-proxy", "start", "--listen-addr", addr,
		"--data-dir", filepath.Join(t.TempDir(), "proxy")}, args...)}
	p.start()
	waitLog(t, p, `"msg":"started gRPC proxy"`)
	return p, addr
}

// waitLog waits for text in the log of m.
func waitLog(t *testing.T, m *member, text string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(m.log(), text) {
		select {
		case <-m.exited:
			t.Fatalf("%s exited; log:\n%s", m.name, m.log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in the log of %s within 20s:\n%s", text, m.name, m.log())
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, not waiting for time to pass
	}
}

func proxyClient(t *testing.T, addr string, cfg clientv3.Config) *clientv3.Client {
	t.Helper()
	cfg.Endpoints, cfg.DialTimeout = []string{addr}, 5*time.Second
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestGRPCProxyFailover: a proxy seeded with one member learns the others
// from the member list, and its calls and its watch survive the loss of
// each member in turn: the watch delivers every event of the cluster's
// history once, in order.
func TestGRPCProxyFailover(t *testing.T) {
	ms := newCluster(t, 3, clusterOptions{})
	proxy, addr := startProxy(t, "--endpoints", ms[0].curl, "--endpoints-auto-sync-interval", "200ms")
	waitLog(t, proxy, `"msg":"updated endpoints","endpoints":["`)
	for _, m := range ms {
		waitLog(t, proxy, m.curl)
	}
	cli := proxyClient(t, addr, clientv3.Config{})
	direct := client(t, ms...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	first, err := cli.Put(ctx, "k/start", "0")
	if err != nil {
		t.Fatal(err)
	}
	start := first.Header.Revision
	watch := cli.Watch(ctx, "k/", clientv3.WithPrefix(), clientv3.WithRev(start))
	var last int64
	for i, m := range ms {
		m.kill()
		// Writes through the proxy: a write whose outcome is unknown may
		// be applied twice, which the comparison below does not mind.
		for {
			resp, err := cli.Put(ctx, fmt.Sprintf("k/%d", i), m.name)
			if err == nil {
				last = resp.Header.Revision
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("put with %s down: %v", m.name, err)
			}
		}
		if got, err := cli.Get(ctx, fmt.Sprintf("k/%d", i)); err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != m.name {
			t.Fatalf("get through the proxy with %s down: %v %v", m.name, got, err)
		}
		m.start()
		waitHealthy(t, ms...)
	}

	var got []*mvccpb.Event
	for len(got) == 0 || got[len(got)-1].Kv.ModRevision < last {
		resp, ok := <-watch
		if !ok || resp.Err() != nil {
			t.Fatalf("the proxy's watch ended: %v (events so far: %d)", resp.Err(), len(got))
		}
		got = append(got, resp.Events...)
	}
	var want []*mvccpb.Event
	for resp := range direct.Watch(ctx, "k/", clientv3.WithPrefix(), clientv3.WithRev(start)) {
		want = append(want, resp.Events...)
		if want[len(want)-1].Kv.ModRevision >= last {
			break
		}
	}
	if !slices.EqualFunc(got, want, func(a, b *mvccpb.Event) bool {
		return a.Type == b.Type && string(a.Kv.Key) == string(b.Kv.Key) && a.Kv.ModRevision == b.Kv.ModRevision
	}) {
		t.Errorf("the proxy's watch delivered %d events, the cluster's history has %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	proxy.stop()
}

// TestGRPCProxyNamespaceAndAuth: behind --namespace a client reads and
// writes, transacts, watches, campaigns and locks under the prefix only,
// seeing its keys without it; its token goes to the cluster, whose
// permission errors come back unchanged.
func TestGRPCProxyNamespaceAndAuth(t *testing.T) {
	ms := newCluster(t, 1, clusterOptions{})
	_, addr := startProxy(t, "--endpoints", ms[0].curl, "--namespace", "t/")
	direct := client(t, ms...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(direct.Put(ctx, "outside", "x"))
	must(direct.RoleAdd(ctx, "tenant"))
	must(direct.RoleGrantPermission(ctx, "tenant", "t/", clientv3.GetPrefixRangeEnd("t/"), clientv3.PermissionType(clientv3.PermReadWrite)))
	// A key outside the namespace the tenant may read (the cluster lists
	// a lease's keys only to who may read them all): the proxy hides it.
	must(direct.RoleGrantPermission(ctx, "tenant", "outside-leased", "", clientv3.PermissionType(clientv3.PermRead)))
	must(direct.UserAdd(ctx, "alice", "secret"))
	must(direct.UserGrantRole(ctx, "alice", "tenant"))
	must(direct.RoleAdd(ctx, "root"))
	must(direct.UserAdd(ctx, "root", "rootpw"))
	must(direct.UserGrantRole(ctx, "root", "root"))
	must(direct.AuthEnable(ctx))
	root, err := clientv3.New(clientv3.Config{Endpoints: []string{ms[0].curl}, Username: "root", Password: "rootpw", DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	alice := proxyClient(t, addr, clientv3.Config{Username: "alice", Password: "secret"})
	put, err := alice.Put(ctx, "a", "1")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := root.Get(ctx, "t/a"); err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "1" {
		t.Fatalf("t/a in the cluster: %v %v", got, err)
	}
	all, err := alice.Get(ctx, "", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Kvs) != 1 || string(all.Kvs[0].Key) != "a" {
		t.Errorf("every key of the tenant: %v", all.Kvs)
	}
	txn, err := alice.Txn(ctx).If(clientv3.Compare(clientv3.Value("a"), "=", "1")).
		Then(clientv3.OpPut("b", "2"), clientv3.OpGet("a")).Commit()
	if err != nil || !txn.Succeeded || string(txn.Responses[1].GetResponseRange().Kvs[0].Key) != "a" {
		t.Fatalf("txn: %v %v", txn, err)
	}
	wresp := <-alice.Watch(ctx, "a", clientv3.WithRev(put.Header.Revision))
	if err := wresp.Err(); err != nil || len(wresp.Events) != 1 || string(wresp.Events[0].Kv.Key) != "a" {
		t.Errorf("watch: %v %v", wresp.Events, err)
	}
	lease, err := alice.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	must(alice.Put(ctx, "leased", "v", clientv3.WithLease(lease.ID)))
	must(root.Put(ctx, "outside-leased", "v", clientv3.WithLease(lease.ID)))
	ttl, err := alice.TimeToLive(ctx, lease.ID, clientv3.WithAttachedKeys())
	if err != nil {
		t.Fatal(err)
	}
	if len(ttl.Keys) != 1 || string(ttl.Keys[0]) != "leased" {
		t.Errorf("the lease's keys seen by the tenant: %q", ttl.Keys)
	}

	session, err := concurrency.NewSession(alice, concurrency.WithTTL(30))
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	election := concurrency.NewElection(session, "e")
	if err := election.Campaign(ctx, "me"); err != nil {
		t.Fatal(err)
	}
	leader, err := election.Leader(ctx)
	if err != nil || !strings.HasPrefix(string(leader.Kvs[0].Key), "e/") {
		t.Errorf("leader through the proxy: %v %v", leader, err)
	}
	if got, err := root.Get(ctx, "t/e/", clientv3.WithPrefix()); err != nil || len(got.Kvs) != 1 {
		t.Errorf("the election's key in the cluster: %v %v", got, err)
	}
	mutex := concurrency.NewMutex(session, "l")
	if err := mutex.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := root.Get(ctx, "t/l/", clientv3.WithPrefix()); err != nil || len(got.Kvs) != 1 {
		t.Errorf("the lock's key in the cluster: %v %v", got, err)
	}
	must(nil, mutex.Unlock(ctx))

	// Without a token, or with one of a user who may not, the cluster's
	// errors come back as they are.
	anonymous := proxyClient(t, addr, clientv3.Config{})
	if _, err := anonymous.Get(ctx, "a"); !errors.Is(err, rpctypes.ErrUserEmpty) {
		t.Errorf("get without a token: %v, want %v", err, rpctypes.ErrUserEmpty)
	}
	must(root.RoleRevokePermission(ctx, "tenant", "t/", clientv3.GetPrefixRangeEnd("t/")))
	if _, err := alice.Put(ctx, "a", "2"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("put without permission: %v, want %v", err, rpctypes.ErrPermissionDenied)
	}
}

// TestGRPCProxyTLS: the proxy serves gRPC and /proxy/health over TLS with
// client certificates, within --tls-min-version and --tls-max-version, to
// a cluster that wants client certificates too (--cert, --key, --cacert).
func TestGRPCProxyTLS(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	ms := newCluster(t, 1, clusterOptions{certs: &certs})
	_, addr := startProxy(t, "--endpoints", ms[0].curl, "--cert-file", certs.ServerCert, "--key-file", certs.ServerKey,
		"--trusted-ca-file", certs.CAFile, "--tls-min-version", "TLS1.3",
		"--cert", certs.ClientCert, "--key", certs.ClientKey, "--cacert", certs.CAFile)
	clientTLS := certs.ClientConfig(t)
	cli := proxyClient(t, addr, clientv3.Config{TLS: clientTLS})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	put, err := cli.Put(ctx, "k", "v")
	if err != nil {
		t.Fatal(err)
	}
	if w := <-cli.Watch(ctx, "k", clientv3.WithRev(put.Header.Revision)); w.Err() != nil || len(w.Events) != 1 {
		t.Errorf("watch through the proxy: %v %v", w.Events, w.Err())
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS}}
	resp, err := hc.Get("https://" + addr + "/proxy/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/proxy/health: %s", resp.Status)
	}
	old := clientTLS.Clone()
	old.MaxVersion = tls.VersionTLS12
	hc = &http.Client{Transport: &http.Transport{TLSClientConfig: old}}
	if resp, err := hc.Get("https://" + addr + "/proxy/health"); err == nil {
		resp.Body.Close()
		t.Error("a TLS 1.2 client was served by a proxy with --tls-min-version TLS1.3")
	}
}

// TestGRPCProxyRegistersItself: proxies started with --resolver-prefix
// register under it as etcd's do (the key prefix/address on a lease, the
// value etcd's endpoint record), list each other as the members, and a
// proxy that stops is no longer listed; a TTL below 1 is refused as etcd
// refuses it.
func TestGRPCProxyRegistersItself(t *testing.T) {
	ms := newCluster(t, 1, clusterOptions{})
	addrs := []string{testnet.FreeAddr(t), testnet.FreeAddr(t)}
	var (
		proxies []*member
		listen  []string
	)
	for _, a := range addrs {
		p, l := startProxy(t, "--endpoints", ms[0].curl, "--advertise-client-url", a,
			"--resolver-prefix", "/proxies", "--resolver-ttl", "10")
		waitLog(t, p, `"msg":"registered session with lease","addr":"`+a+`","lease-ttl":10`)
		proxies, listen = append(proxies, p), append(listen, l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	direct := client(t, ms...)
	got, err := direct.Get(ctx, "/proxies/"+addrs[0])
	if err != nil || len(got.Kvs) != 1 || got.Kvs[0].Lease == 0 {
		t.Fatalf("the registration of %s: %v %v", addrs[0], got, err)
	}
	if v := string(got.Kvs[0].Value); !strings.HasPrefix(v, `{"Op":0,"Addr":"`+addrs[0]+`","Metadata":"{\"name\":\"`) {
		t.Errorf("registration value %s, want etcd's endpoint record", v)
	}

	listed := func(via *clientv3.Client) []string {
		t.Helper()
		resp, err := via.MemberList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var urls []string
		for _, m := range resp.Members {
			urls = append(urls, m.ClientURLs...)
		}
		return urls
	}
	// The advertised addresses (here not those of the listeners) are what
	// a client is given.
	via := proxyClient(t, listen[0], clientv3.Config{})
	if urls := listed(via); len(urls) != 2 || !slices.Contains(urls, addrs[0]) || !slices.Contains(urls, addrs[1]) {
		t.Errorf("member list through a proxy: %v, want the two proxies %v", urls, addrs)
	}
	proxies[1].stop()
	if urls := listed(via); len(urls) != 1 || urls[0] != addrs[0] {
		t.Errorf("member list after a proxy stopped: %v, want %v", urls, addrs[:1])
	}

	out, err := exec.Command(cairnBin, "grpc-proxy", "start", "--endpoints", ms[0].curl, "--listen-addr", testnet.FreeAddr(t),
		"--resolver-prefix", "/proxies", "--data-dir", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "invalid resolver-ttl 0") {
		t.Errorf("--resolver-prefix without --resolver-ttl: %v, %s", err, out)
	}
}

// TestGRPCProxyNamespaceIsolation: through a proxy with --namespace /a/,
// the widest reads, deletes, watches and compares a client can make reach
// only the keys under /a/, whatever the keys beside it are called.
func TestGRPCProxyNamespaceIsolation(t *testing.T) {
	ms := newCluster(t, 1, clusterOptions{})
	_, addr := startProxy(t, "--endpoints", ms[0].curl, "--namespace", "/a/")
	direct := client(t, ms...)
	tenant := proxyClient(t, addr, clientv3.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	outside := []string{"/a", "/a0", "/ab/x", "/b/x", "a/x", "/", "\xff", "/a\x00"}
	for _, k := range outside {
		if _, err := direct.Put(ctx, k, "outside"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tenant.Put(ctx, "x", "inside"); err != nil {
		t.Fatal(err)
	}
	wch := tenant.Watch(ctx, "", clientv3.WithFromKey())

	all, err := tenant.Get(ctx, "\x00", clientv3.WithFromKey())
	if err != nil || len(all.Kvs) != 1 || string(all.Kvs[0].Key) != "x" {
		t.Fatalf("every key the tenant can read: %v %v", all.Kvs, err)
	}
	// A write outside, then the tenant's own: its watch sees only its own.
	if _, err := direct.Put(ctx, "/b/x", "outside again"); err != nil {
		t.Fatal(err)
	}
	if _, err := tenant.Put(ctx, "y", "inside"); err != nil {
		t.Fatal(err)
	}
	if w := <-wch; w.Err() != nil || len(w.Events) != 1 || string(w.Events[0].Kv.Key) != "y" {
		t.Errorf("the tenant's watch of every key: %v %v", w.Events, w.Err())
	}
	// A compare on a key named as one outside is a compare of the tenant's.
	txn, err := tenant.Txn(ctx).If(clientv3.Compare(clientv3.Value("/b/x"), "=", "outside again")).Commit()
	if err != nil || txn.Succeeded {
		t.Errorf("a compare with a key outside: succeeded %v, %v", txn != nil && txn.Succeeded, err)
	}
	del, err := tenant.Delete(ctx, "\x00", clientv3.WithFromKey())
	if err != nil || del.Deleted != 2 {
		t.Fatalf("the tenant's delete of every key: %v %v", del, err)
	}
	for _, k := range outside {
		got, err := direct.Get(ctx, k)
		if err != nil || len(got.Kvs) != 1 {
			t.Errorf("%q outside the namespace after the tenant's delete of every key: %v %v", k, got, err)
		}
	}
}
