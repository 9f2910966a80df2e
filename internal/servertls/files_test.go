package servertls

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/internal/tlstest"
)

func TestCertificateNeedsItsKey(t *testing.T) {
	err := Files{Prefix: "peer-", CertFile: "server.pem"}.Check()
	if err == nil || err.Error() != "--peer-key-file and --peer-cert-file must both be present [key: , cert: server.pem]" {
		t.Fatalf("error %v", err)
	}
}

func TestServerConfig(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	files := Files{CertFile: certs.ServerCert, KeyFile: certs.ServerKey}
	cfg, err := files.ServerConfig(Versions{Min: "TLS1.3"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ClientAuth != tls.NoClientCert || cfg.GetCertificate == nil || cfg.MinVersion != tls.VersionTLS13 {
		t.Errorf("without a CA: client auth %v, a certificate %v, min version %x", cfg.ClientAuth, cfg.GetCertificate != nil, cfg.MinVersion)
	}
	for _, f := range []Files{
		{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, ClientCertAuth: true},
		{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, TrustedCAFile: certs.CAFile}, // etcd requires client certificates then too
	} {
		cfg, err := f.ServerConfig(Versions{})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ClientAuth != tls.RequireAndVerifyClientCert {
			t.Errorf("%+v: client auth %v, want certificates required", f, cfg.ClientAuth)
		}
	}
}

func TestBadFilesAreRefused(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		files Files
		want  string
	}{
		{Files{CertFile: "/nonexistent.pem", KeyFile: certs.ServerKey}, "load --cert-file /nonexistent.pem and --key-file " + certs.ServerKey + ": open /nonexistent.pem: no such file or directory"},
		{Files{CertFile: certs.ServerCert, KeyFile: certs.ClientKey}, "tls: private key does not match public key"},
		{Files{Prefix: "peer-", CertFile: garbage, KeyFile: certs.ServerKey}, "load --peer-cert-file " + garbage},
		{Files{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, TrustedCAFile: garbage}, "load --trusted-ca-file: no certificate found in " + garbage},
		{Files{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, TrustedCAFile: "/nonexistent.pem"}, "load --trusted-ca-file: open /nonexistent.pem"},
		{Files{Prefix: "peer-"}, "no --peer-cert-file and --peer-key-file given"},
		{Files{CertFile: certs.ServerCert}, "--key-file and --cert-file must both be present"},
	} {
		_, err := tc.files.ServerConfig(Versions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.files, err, tc.want)
		}
	}
}

func TestDialConfig(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	cfg, err := Files{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, TrustedCAFile: certs.CAFile}.DialConfig(Versions{})
	if err != nil {
		t.Fatal(err)
	}
	// The CA file is checked by VerifyConnection, which can see a new one.
	if cfg.GetClientCertificate == nil || cfg.VerifyConnection == nil || !cfg.InsecureSkipVerify {
		t.Errorf("with files: a certificate %v, verified %v, skip Go's verification %v", cfg.GetClientCertificate != nil, cfg.VerifyConnection != nil, cfg.InsecureSkipVerify)
	}
	cfg, err = Files{}.DialConfig(Versions{})
	if err != nil || cfg.GetClientCertificate != nil || cfg.VerifyConnection != nil || cfg.InsecureSkipVerify {
		t.Errorf("without files: %v, a certificate %v, custom verification %v, skip verify %v", err, cfg.GetClientCertificate != nil, cfg.VerifyConnection != nil, cfg.InsecureSkipVerify)
	}
}

// rawCert is the DER bytes of the PEM certificate in path (tlstest's
// NAME.pem, with NAME-key.pem).
func rawCert(t *testing.T, path string) []byte {
	t.Helper()
	return loadCert(t, path, strings.TrimSuffix(path, ".pem")+"-key.pem").Raw
}

// TestClientCertificateChecks: --peer-crl-file refuses a revoked
// certificate, --peer-cert-allowed-cn one with another common name and
// --peer-cert-allowed-hostname one valid for none of the host names.
func TestClientCertificateChecks(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	revoked, _ := certs.IssueMember(t, "revoked")
	good, _ := certs.IssueMember(t, "good")
	crl := certs.Revoke(t, revoked)
	for _, tc := range []struct {
		files   Files
		cert    string
		refused string
	}{
		{Files{CRLFile: crl}, revoked, "is revoked by --peer-crl-file"},
		{Files{CRLFile: crl}, good, ""},
		{Files{AllowedCNs: []string{"a", "good"}}, good, ""},
		{Files{AllowedCNs: []string{"a"}}, good, `client certificate authentication failed: common name "good" is not among --peer-cert-allowed-cn [a]`},
		{Files{AllowedHostnames: []string{"localhost"}}, good, ""},
		{Files{AllowedHostnames: []string{"example.com"}}, good, "client certificate authentication failed"},
	} {
		f := tc.files
		f.Prefix, f.CertFile, f.KeyFile, f.TrustedCAFile = "peer-", certs.ServerCert, certs.ServerKey, certs.CAFile
		cfg, err := f.ServerConfig(Versions{})
		if err != nil {
			t.Fatal(err)
		}
		err = cfg.VerifyPeerCertificate([][]byte{rawCert(t, tc.cert)}, nil)
		if tc.refused == "" && err != nil || tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)) {
			t.Errorf("%+v, %s: %v, want refused: %q", tc.files, filepath.Base(tc.cert), err, tc.refused)
		}
	}
	if err := (Files{CRLFile: certs.CAFile}).Check(); err == nil {
		t.Error("a CRL file that is a certificate was accepted")
	}
}

// TestDialWithClientCertificate: --peer-client-cert-file is what a member
// presents to the peers it dials, rather than --peer-cert-file.
func TestDialWithClientCertificate(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	cfg, err := Files{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, ClientCertFile: certs.ClientCert, ClientKeyFile: certs.ClientKey}.DialConfig(Versions{})
	if err != nil {
		t.Fatal(err)
	}
	if cert, err := cfg.GetClientCertificate(nil); err != nil || string(cert.Certificate[0]) != string(rawCert(t, certs.ClientCert)) {
		t.Errorf("dialling with the server certificate, not the client one (%v)", err)
	}
	if err := (Files{Prefix: "peer-", ClientCertFile: "c.pem"}).Check(); err == nil || !strings.Contains(err.Error(), "--peer-client-key-file and --peer-client-cert-file must both be present") {
		t.Errorf("client cert without its key: %v", err)
	}
}

// TestPeerClientSANVerified: with VerifyClientSAN (etcd's peers without
// --peer-skip-client-san-verification) a client certificate whose IP or
// DNS SANs do not name the address it connects from is refused, with
// etcd's error; one naming it, or with no SAN, is taken.
func TestPeerClientSANVerified(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	files := Files{Prefix: "peer-", CertFile: certs.ServerCert, KeyFile: certs.ServerKey, TrustedCAFile: certs.CAFile, VerifyClientSAN: true}
	cfg, err := files.ServerConfig(Versions{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	handshakes := make(chan error)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			handshakes <- c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	for _, tc := range []struct {
		hosts   []string
		refused string
	}{
		{[]string{"127.0.0.1"}, ""},
		{[]string{"localhost"}, ""},
		{nil, ""},
		{[]string{"10.9.9.9"}, "x509: certificate is valid for 10.9.9.9, not 127.0.0.1"},
		{[]string{"example.invalid"}, `tls: "127.0.0.1" does not match any of DNSNames ["example.invalid"]`},
	} {
		name := "san-" + strings.Join(tc.hosts, "-")
		cert, key := certs.IssueMemberFor(t, name, tc.hosts...)
		c, err := tls.Dial("tcp", ln.Addr().String(), certs.ConfigFor(t, cert, key))
		if err == nil {
			c.Handshake()
			c.Close()
		}
		err = <-handshakes
		if tc.refused == "" && err != nil || tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)) {
			t.Errorf("SANs %v: server handshake %v, want refused: %q", tc.hosts, err, tc.refused)
		}
	}
}
