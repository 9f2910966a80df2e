package api

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/server"
	"github.com/cairnkv/cairn/internal/servertls"
	"github.com/cairnkv/cairn/internal/testnet"
	"github.com/cairnkv/cairn/internal/tlstest"
)

// newTLSMember starts a member that serves clients over https only and
// requires client certificates signed by the test CA.
func newTLSMember(t *testing.T, certs tlstest.Certificates, clientCertAuth bool) *member {
	t.Helper()
	return newMember(t, memberconfig.Config{ClientTLS: servertls.Files{
		CertFile: certs.ServerCert, KeyFile: certs.ServerKey, TrustedCAFile: certs.CAFile, ClientCertAuth: clientCertAuth}})
}

// get fetches a URL with client and returns the HTTP version, the status
// and the body.
func get(t *testing.T, client *http.Client, url string) (proto int, status int, body string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.ProtoMajor, resp.StatusCode, string(b)
}

// certConfig is a TLS configuration with a new client certificate named cn.
func certConfig(t *testing.T, certs tlstest.Certificates, cn string) *tls.Config {
	t.Helper()
	cert, key := certs.IssueClient(t, cn)
	return certs.ConfigFor(t, cert, key)
}

func TestClientTLS(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	m := newTLSMember(t, certs, true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	cli := m.tlsClient(certs.ClientConfig(t), "", "")
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	events := cli.Watch(ctx, "k", clientv3.WithRev(1)) // a stream, as well as unary calls
	if ev := <-events; len(ev.Events) != 1 || string(ev.Events[0].Kv.Value) != "v" {
		t.Fatalf("watch over TLS: %+v, %v", ev, ev.Err())
	}

	// Health, metrics and the JSON gateway share the port, over HTTP/1.1
	// and HTTP/2.
	for _, force2 := range []bool{false, true} {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: certs.ClientConfig(t), ForceAttemptHTTP2: force2}}
		defer c.CloseIdleConnections()
		proto, status, body := get(t, c, m.curl+"/health")
		if want := map[bool]int{false: 1, true: 2}[force2]; proto != want || status != http.StatusOK || !strings.Contains(body, `"health":"true"`) {
			t.Errorf("/health: HTTP/%d, %d %s; want HTTP/%d, 200", proto, status, body, want)
		}
		resp, err := c.Post(m.curl+"/v3/kv/range", "application/json", strings.NewReader(`{"key":"aw=="}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"value":"dg=="`) {
			t.Errorf("JSON range over TLS (HTTP/%d): %s", resp.ProtoMajor, b)
		}
	}

	// Refused: a client without a certificate, and plain HTTP on the TLS
	// port. The member keeps serving.
	anonymous := m.tlsClient(certs.ConfigFor(t, "", ""), "", "")
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	if _, err := anonymous.Get(short, "k"); err == nil {
		t.Error("a client without a certificate was served")
	}
	if _, status, _ := get(t, http.DefaultClient, strings.Replace(m.curl, "https://", "http://", 1)+"/health"); status != http.StatusBadRequest {
		t.Errorf("plain HTTP on the TLS port: status %d, want 400", status)
	}
	if _, err := cli.Get(ctx, "k"); err != nil {
		t.Fatalf("the member stopped serving: %v", err)
	}
}

// newTLSMemberWithAuth starts a member as newTLSMember does, with the users
// and roles of setUpAuth and authentication enabled.
func newTLSMemberWithAuth(t *testing.T, clientCertAuth bool) (*member, tlstest.Certificates, context.Context) {
	t.Helper()
	certs := tlstest.NewCertificates(t)
	m := newTLSMember(t, certs, clientCertAuth)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	setUpAuth(t, ctx, m.tlsClient(certs.ClientConfig(t), "", ""))
	return m, certs, ctx
}

func TestCommonNameIsTheUser(t *testing.T) {
	m, certs, ctx := newTLSMemberWithAuth(t, true)
	as := func(cn string) *tls.Config { return certConfig(t, certs, cn) }

	root := m.tlsClient(as("root"), "", "")
	if _, err := root.Put(ctx, "secret", "s2"); err != nil { // checked at apply time
		t.Fatalf("put as root by certificate: %v", err)
	}
	if _, err := root.Compact(ctx, 1); err != nil { // an admin call
		t.Fatalf("compact as root by certificate: %v", err)
	}
	alice := m.tlsClient(as("alice"), "", "")
	if g, err := alice.Get(ctx, "/app/x"); err != nil || len(g.Kvs) != 1 {
		t.Fatalf("get as alice by certificate: %v %v", g, err)
	}
	for what, err := range map[string]error{
		"alice reads a key of no role of hers": func() error { _, err := alice.Get(ctx, "secret"); return err }(),
		"alice writes":                         func() error { _, err := alice.Put(ctx, "/app/x", "2"); return err }(),
		"bob, who is no user, reads":           func() error { _, err := m.tlsClient(as("bob"), "", "").Get(ctx, "/app/x"); return err }(),
	} {
		if !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Errorf("%s: error %v, want %v", what, err, rpctypes.ErrPermissionDenied)
		}
	}
	if _, err := m.tlsClient(as("alice"), "root", "rootpw").Get(ctx, "secret"); err != nil {
		t.Errorf("a token wins over the certificate: %v", err)
	}

	// The JSON gateway cannot pass the certificate on: etcd refuses.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: as("root")}}
	defer c.CloseIdleConnections()
	resp, err := c.Post(m.curl+"/v3/kv/range", "application/json", strings.NewReader(`{"key":"aw=="}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || strings.TrimSpace(string(b)) != errGatewayCertUser {
		t.Errorf("JSON with a certificate while auth is on: %s %s", resp.Status, b)
	}
}

// Without --client-cert-auth, a trusted CA still makes certificates
// required, but their names are no users (as in etcd).
func TestCommonNameNeedsClientCertAuth(t *testing.T) {
	m, certs, ctx := newTLSMemberWithAuth(t, false)
	root := m.tlsClient(certConfig(t, certs, "root"), "", "")
	if _, err := root.Get(ctx, "secret"); !errors.Is(err, rpctypes.ErrUserEmpty) {
		t.Errorf("get with a root certificate: error %v, want %v", err, rpctypes.ErrUserEmpty)
	}
}

// TestHTTPAndHTTPSOnOnePort: an http and an https client URL of the same
// host and port share it, as etcd's do (etcd's TestConnectionMultiplexing):
// gRPC and HTTP, each with and without TLS.
func TestHTTPAndHTTPSOnOnePort(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	addr := testnet.FreeAddr(t)
	cfg := memberconfig.Config{Name: "m1", DataDir: t.TempDir(), BcryptCost: testBcryptCost,
		ListenClientURLs: []string{"http://" + addr, "https://" + addr}, ListenPeerURLs: []string{testnet.FreeURL(t)},
		ClientTLS: servertls.Files{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, TrustedCAFile: certs.CAFile}}
	s, err := server.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	a := New(s, nil)
	if err := a.Serve(cfg.ListenClientURLs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for i, tlsConfig := range []*tls.Config{nil, certs.ClientConfig(t)} {
		scheme := map[bool]string{false: "http://", true: "https://"}[tlsConfig != nil]
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{scheme + addr}, DialTimeout: 5 * time.Second, TLS: tlsConfig})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		if _, err := cli.Put(ctx, "k", fmt.Sprint(i)); err != nil {
			t.Fatalf("gRPC put over %s: %v", scheme, err)
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}
		if _, status, body := get(t, hc, scheme+addr+"/health"); status != http.StatusOK || !strings.Contains(body, `"health":"true"`) {
			t.Errorf("GET %s/health: %d %s", scheme+addr, status, body)
		}
	}
}
