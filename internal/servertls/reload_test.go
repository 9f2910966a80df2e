package servertls

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/tlstest"
)

// fakeClock makes the reloaders' clock one the test moves on: tick makes
// the next handshake read the files again.
func fakeClock(t *testing.T) (tick func()) {
	var skew atomic.Int64
	now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	t.Cleanup(func() { now = time.Now })
	return func() { skew.Add(int64(checkEvery)) }
}

// logBuffer is a log that handshakes on other goroutines write to.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) warnings() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for line := range strings.Lines(b.buf.String()) {
		if strings.Contains(line, "level=WARN") {
			out = append(out, line)
		}
	}
	return out
}

func newLog() (*slog.Logger, *logBuffer) {
	b := new(logBuffer)
	return slog.New(slog.NewTextHandler(b, nil)), b
}

// install puts a copy of src at dst as cert-manager does: a new file
// renamed over the old one.
func install(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// rewrite writes data over the file at path, in place.
func rewrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// concat writes the contents of files one after the other into dst (a CA
// bundle), by a rename.
func concat(t *testing.T, dst string, files ...string) {
	t.Helper()
	var all []byte
	for _, f := range files {
		all = append(all, readFile(t, f)...)
	}
	src := filepath.Join(t.TempDir(), "bundle.pem")
	rewrite(t, src, all)
	install(t, src, dst)
}

// listen serves cfg on a loopback port until the test ends; each
// connection's server-side handshake result is sent on the channel.
func listen(t *testing.T, cfg *tls.Config) (string, <-chan error) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			results <- c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String(), results
}

// handshake connects to addr with cfg and returns the certificate the
// server presented (nil if the client's side failed) and the server's
// handshake result, which says whether the client's certificate was taken.
func handshake(t *testing.T, addr string, results <-chan error, cfg *tls.Config) ([]byte, error) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, cfg)
	var served []byte
	if err == nil {
		served = c.ConnectionState().PeerCertificates[0].Raw
		// Wait for the server to close: its side of the handshake, which
		// in TLS 1.3 ends after the client's, is done.
		io.Copy(io.Discard, c)
		c.Close()
	}
	return served, <-results
}

// presenting is cfg presenting its certificate even to a server whose
// list of CAs does not name the certificate's issuer, as a member does to
// its peers; a refusal is then the server's verification.
func presenting(cfg *tls.Config) *tls.Config {
	cert := cfg.Certificates[0]
	cfg.Certificates = nil
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	return cfg
}

// TestServerCertificateRotation: a certificate and key renamed into place,
// then rewritten in place, are served from the next handshake after the
// check interval; not before.
func TestServerCertificateRotation(t *testing.T) {
	tick := fakeClock(t)
	certs := tlstest.NewCertificates(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	install(t, certs.ServerCert, certFile)
	install(t, certs.ServerKey, keyFile)
	cfg, err := Files{CertFile: certFile, KeyFile: keyFile}.ServerConfig(Versions{})
	if err != nil {
		t.Fatal(err)
	}
	addr, results := listen(t, cfg)
	client := certs.ConfigFor(t, "", "")
	served := func() []byte {
		t.Helper()
		cert, err := handshake(t, addr, results, client)
		if err != nil || cert == nil {
			t.Fatalf("handshake: %v", err)
		}
		return cert
	}
	if !bytes.Equal(served(), rawCert(t, certs.ServerCert)) {
		t.Fatal("not serving the certificate given")
	}

	renamed, renamedKey := certs.IssueMember(t, "renamed")
	install(t, renamedKey, keyFile)
	install(t, renamed, certFile)
	if !bytes.Equal(served(), rawCert(t, certs.ServerCert)) {
		t.Error("the files were read again within the check interval")
	}
	tick()
	if !bytes.Equal(served(), rawCert(t, renamed)) {
		t.Error("a certificate renamed into place is not served")
	}

	inPlace, inPlaceKey := certs.IssueMember(t, "in-place")
	rewrite(t, keyFile, readFile(t, inPlaceKey))
	rewrite(t, certFile, readFile(t, inPlace))
	tick()
	if !bytes.Equal(served(), rawCert(t, inPlace)) {
		t.Error("a certificate rewritten in place is not served")
	}
}

// TestBadCertificateKept: a certificate file half written, then a key
// that is not the certificate's, are refused with one warning each, however
// many handshakes come, and the previous certificate is served; good files
// are taken again.
func TestBadCertificateKept(t *testing.T) {
	tick := fakeClock(t)
	certs := tlstest.NewCertificates(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "peer.pem"), filepath.Join(dir, "peer-key.pem")
	install(t, certs.ServerCert, certFile)
	install(t, certs.ServerKey, keyFile)
	log, logs := newLog()
	cfg, err := Files{Prefix: "peer-", CertFile: certFile, KeyFile: keyFile, Log: log}.ServerConfig(Versions{})
	if err != nil {
		t.Fatal(err)
	}
	addr, results := listen(t, cfg)
	client := certs.ConfigFor(t, "", "")
	servesOld := func(what string) {
		t.Helper()
		for range 3 {
			tick()
			cert, err := handshake(t, addr, results, client)
			if err != nil || !bytes.Equal(cert, rawCert(t, certs.ServerCert)) {
				t.Fatalf("%s: handshake %v, or not the previous certificate", what, err)
			}
		}
	}

	next, nextKey := certs.IssueMember(t, "next")
	pem := readFile(t, next)
	rewrite(t, certFile, pem[:len(pem)/2])
	servesOld("half-written certificate")
	if w := logs.warnings(); len(w) != 1 || !strings.Contains(w[0], "flag=--peer-cert-file") || !strings.Contains(w[0], "file="+certFile) ||
		!strings.Contains(w[0], "failed to find any PEM data in certificate input") {
		t.Fatalf("want one warning naming the flag, the file and the error; got %q", w)
	}

	rewrite(t, certFile, pem)
	servesOld("the key of another certificate")
	if w := logs.warnings(); len(w) != 2 || !strings.Contains(w[1], "private key does not match public key") {
		t.Fatalf("want a second warning for the key; got %q", w)
	}

	install(t, nextKey, keyFile)
	tick()
	if cert, err := handshake(t, addr, results, client); err != nil || !bytes.Equal(cert, rawCert(t, next)) {
		t.Errorf("the good pair is not served: %v", err)
	}
	if w := logs.warnings(); len(w) != 2 {
		t.Errorf("more warnings: %q", w)
	}
}

// TestClientCARotation: a CA bundle with a new CA added makes client
// certificates of that CA taken, and once the old CA is removed the old
// one's are refused, with the check of client SANs still made.
func TestClientCARotation(t *testing.T) {
	tick := fakeClock(t)
	oldCA, newCA := tlstest.NewCertificates(t), tlstest.NewCertificates(t)
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	install(t, oldCA.CAFile, bundle)
	files := Files{Prefix: "peer-", CertFile: oldCA.ServerCert, KeyFile: oldCA.ServerKey, TrustedCAFile: bundle, VerifyClientSAN: true}
	cfg, err := files.ServerConfig(Versions{})
	if err != nil {
		t.Fatal(err)
	}
	addr, results := listen(t, cfg)
	oldClient := presenting(oldCA.ConfigFor(t, oldCA.ServerCert, oldCA.ServerKey))
	newClient := presenting(oldCA.ConfigFor(t, newCA.ServerCert, newCA.ServerKey)) // trusts the server's (old) CA
	elsewhere, elsewhereKey := newCA.IssueMemberFor(t, "elsewhere", "10.9.9.9")
	wrongSAN := presenting(oldCA.ConfigFor(t, elsewhere, elsewhereKey))
	check := func(stage string, cfg *tls.Config, want string) {
		t.Helper()
		_, err := handshake(t, addr, results, cfg)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: server handshake %v, want refused: %q", stage, err, want)
		}
	}
	check("old CA", oldClient, "")
	check("old CA", newClient, "certificate signed by unknown authority")

	concat(t, bundle, oldCA.CAFile, newCA.CAFile)
	tick()
	check("both CAs", oldClient, "")
	check("both CAs", newClient, "")
	check("both CAs", wrongSAN, "x509: certificate is valid for 10.9.9.9, not 127.0.0.1")

	install(t, newCA.CAFile, bundle)
	tick()
	check("new CA", oldClient, "certificate signed by unknown authority")
	check("new CA", newClient, "")
}

// TestDialRotation: the side that dials peers presents its new client
// certificate and verifies peers against its new CA bundle, including the
// host name when the handshake names one.
func TestDialRotation(t *testing.T) {
	tick := fakeClock(t)
	oldCA, newCA := tlstest.NewCertificates(t), tlstest.NewCertificates(t)
	dir := t.TempDir()
	bundle, certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	install(t, oldCA.CAFile, bundle)
	install(t, oldCA.ClientCert, certFile)
	install(t, oldCA.ClientKey, keyFile)
	files := Files{Prefix: "peer-", CertFile: oldCA.ServerCert, KeyFile: oldCA.ServerKey, ClientCertFile: certFile, ClientKeyFile: keyFile, TrustedCAFile: bundle}
	dial, err := files.DialConfig(Versions{})
	if err != nil {
		t.Fatal(err)
	}
	// A peer that serves a certificate of the new CA and takes any client
	// certificate; the test reads the one presented.
	serverCert, err := tls.LoadX509KeyPair(newCA.ServerCert, newCA.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	var presented atomic.Value
	addr, results := listen(t, &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequireAnyClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error { presented.Store(cs.PeerCertificates[0].Raw); return nil }})
	dialAs := func(serverName string) error {
		conn, err := tls.Dial("tcp", addr, ForHost(dial, serverName))
		if err == nil {
			io.Copy(io.Discard, conn)
			conn.Close()
		}
		return errors.Join(err, <-results)
	}
	var unknown *tls.CertificateVerificationError
	if err := dialAs("127.0.0.1"); !errors.As(err, &unknown) || !strings.Contains(err.Error(), "tls: failed to verify certificate: x509: certificate signed by unknown authority") {
		t.Errorf("a peer of another CA: %v", err)
	}

	concat(t, bundle, oldCA.CAFile, newCA.CAFile)
	newClient, newClientKey := newCA.IssueClient(t, "new-client")
	install(t, newClientKey, keyFile)
	install(t, newClient, certFile)
	tick()
	if err := dialAs("127.0.0.1"); err != nil {
		t.Fatalf("a peer of the new CA, in the bundle now: %v", err)
	}
	if got, _ := presented.Load().([]byte); !bytes.Equal(got, rawCert(t, newClient)) {
		t.Error("the new client certificate is not presented")
	}
	if err := dialAs("localhost"); err != nil {
		t.Errorf("by a host name of its certificate: %v", err)
	}
	if err := dialAs("example.com"); err == nil || !strings.Contains(err.Error(), "x509: certificate is valid for localhost, not example.com") {
		t.Errorf("by a host name not in its certificate: %v", err)
	}
}

// TestCRLRotation: a new CRL refuses the certificates it revokes from the
// next check; a bad one leaves the previous list in use.
func TestCRLRotation(t *testing.T) {
	tick := fakeClock(t)
	certs := tlstest.NewCertificates(t)
	crl := filepath.Join(t.TempDir(), "crl.pem")
	install(t, certs.Revoke(t), crl)
	log, logs := newLog()
	cfg, err := Files{Prefix: "peer-", CertFile: certs.ServerCert, KeyFile: certs.ServerKey, TrustedCAFile: certs.CAFile, CRLFile: crl, Log: log}.ServerConfig(Versions{})
	if err != nil {
		t.Fatal(err)
	}
	addr, results := listen(t, cfg)
	revoked, revokedKey := certs.IssueMember(t, "to-revoke")
	client := certs.ConfigFor(t, revoked, revokedKey)
	if _, err := handshake(t, addr, results, client); err != nil {
		t.Fatalf("before the CRL revokes it: %v", err)
	}
	install(t, certs.Revoke(t, revoked), crl)
	tick()
	if _, err := handshake(t, addr, results, client); err == nil || !strings.Contains(err.Error(), "is revoked by --peer-crl-file") {
		t.Fatalf("with the new CRL: %v", err)
	}
	rewrite(t, crl, []byte("not a CRL\n"))
	tick()
	if _, err := handshake(t, addr, results, client); err == nil || !strings.Contains(err.Error(), "is revoked by --peer-crl-file") {
		t.Errorf("with a bad CRL after it: %v", err)
	}
	if w := logs.warnings(); len(w) != 1 || !strings.Contains(w[0], "flag=--peer-crl-file") {
		t.Errorf("want one warning for the bad CRL; got %q", w)
	}
}
