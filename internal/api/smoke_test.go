package api

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/crypto/bcrypt"

	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/server"
	"github.com/cairnkv/cairn/internal/testnet"
)

// testBcryptCost is the cheapest bcrypt cost: the tests' passwords need no
// strength, and the default cost takes seconds under the race detector.
const testBcryptCost = bcrypt.MinCost

// startMember runs a single-member cluster in process with its client API,
// stopped at the end of the test, and returns its client URL, the member
// and a client of it. cfg may name the peer URL; the rest is chosen here.
func startMember(t testing.TB, cfg memberconfig.Config) (string, *server.Server, *clientv3.Client) {
	t.Helper()
	curl := testnet.FreeURL(t)
	cfg.Name, cfg.DataDir = "m1", t.TempDir()
	if cfg.BcryptCost == 0 {
		cfg.BcryptCost = testBcryptCost
	}
	cfg.ListenClientURLs = []string{curl}
	if len(cfg.ListenPeerURLs) == 0 {
		cfg.ListenPeerURLs = []string{testnet.FreeURL(t)}
	}
	s, err := server.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	a := New(s, nil)
	if err := a.Serve([]string{curl}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{curl}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return curl, s, cli
}

func TestSingleMemberInProcess(t *testing.T) {
	curl, s, cli := startMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "foo", "bar"); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "foo")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "bar" {
		t.Fatalf("get: %v %v", resp, err)
	}
	wch := cli.Watch(ctx, "k", clientv3.WithPrefix(), clientv3.WithPrevKV())
	txn, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.Value("foo"), "=", "bar")).
		Then(clientv3.OpPut("k1", "v1"), clientv3.OpGet("foo")).Else(clientv3.OpPut("k2", "v2")).Commit()
	if err != nil || !txn.Succeeded {
		t.Fatalf("txn: %v %v", txn, err)
	}
	cli.Put(ctx, "k1", "v1b")
	ev := <-wch
	if len(ev.Events) != 1 || string(ev.Events[0].Kv.Value) != "v1" {
		t.Fatalf("watch: %+v", ev)
	}
	ev = <-wch
	if len(ev.Events) != 1 || string(ev.Events[0].PrevKv.Value) != "v1" {
		t.Fatalf("watch prev kv: %+v", ev)
	}
	lg, err := cli.Grant(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "leased", "x", clientv3.WithLease(lg.ID)); err != nil {
		t.Fatal(err)
	}
	ka, err := cli.KeepAliveOnce(ctx, lg.ID)
	if err != nil || ka.TTL != 5 {
		t.Fatalf("keepalive: %v %v", ka, err)
	}
	ttl, err := cli.TimeToLive(ctx, lg.ID, clientv3.WithAttachedKeys())
	if err != nil || len(ttl.Keys) != 1 {
		t.Fatalf("ttl: %v %v", ttl, err)
	}
	if _, err := cli.Revoke(ctx, lg.ID); err != nil {
		t.Fatal(err)
	}
	if g, _ := cli.Get(ctx, "leased"); len(g.Kvs) != 0 {
		t.Fatalf("leased key survived revoke")
	}
	ml, err := cli.MemberList(ctx)
	if err != nil || len(ml.Members) != 1 || ml.Members[0].Name != "m1" {
		t.Fatalf("member list: %v %v", ml, err)
	}
	st, err := cli.Status(ctx, curl)
	if err != nil || st.Leader != s.ID() {
		t.Fatalf("status: %v %v", st, err)
	}
	if _, err := cli.Compact(ctx, 3, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Get(ctx, "foo", clientv3.WithRev(2)); err == nil {
		t.Fatal("read below the compaction worked")
	} else {
		t.Logf("as expected: %v", err)
	}
}

func TestMetricsAndHealth(t *testing.T) {
	curl, _, cli := startMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	body := func(path string) string {
		resp, err := http.Get(curl + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s %s", path, resp.Status, b)
		}
		return string(b)
	}
	if h := body("/health"); !strings.Contains(h, `"health":"true"`) {
		t.Errorf("/health: %s", h)
	}
	m := body("/metrics")
	for _, want := range []string{"etcd_server_has_leader 1", "etcd_server_is_leader 1", "etcd_debugging_mvcc_current_revision 2", "etcd_mvcc_db_total_size_in_bytes"} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestPprofOnlyWhenEnabled: --enable-pprof serves Go's profiles at
// /debug/pprof/ on the client URL; without it the path is not there.
func TestPprofOnlyWhenEnabled(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		curl, _, _ := startMember(t, memberconfig.Config{EnablePprof: enabled})
		resp, err := http.Get(curl + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		served := resp.StatusCode == http.StatusOK && strings.Contains(string(b), "goroutine profile:")
		if served != enabled {
			t.Errorf("EnablePprof %v: /debug/pprof/goroutine gave %s", enabled, resp.Status)
		}
	}
}

// TestJSONGateway uses the HTTP/JSON API as curl users do.
func TestJSONGateway(t *testing.T) {
	curl, _, _ := startMember(t, memberconfig.Config{})
	post := func(path, body string) string { return postJSON(t, curl+path, body) }
	post("/v3/kv/put", `{"key":"Zm9v","value":"YmFy"}`) // foo=bar, base64
	got := post("/v3/kv/range", `{"key":"Zm9v"}`)
	if !strings.Contains(got, `"kvs":[{"key":"Zm9v"`) || !strings.Contains(got, `"value":"YmFy"`) {
		t.Errorf("range over JSON: %s", got)
	}
	if got := post("/v3/kv/range", `{"key":""}`); !strings.Contains(got, "etcdserver: key is not provided") {
		t.Errorf("empty key over JSON: %s", got)
	}
}
