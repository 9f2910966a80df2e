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
	if cfg.ClientAuth != tls.NoClientCert || len(cfg.Certificates) != 1 || cfg.MinVersion != tls.VersionTLS13 {
		t.Errorf("without a CA: client auth %v, %d certificates, min version %x", cfg.ClientAuth, len(cfg.Certificates), cfg.MinVersion)
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
	if len(cfg.Certificates) != 1 || cfg.RootCAs == nil || cfg.InsecureSkipVerify {
		t.Errorf("with files: %d certificates, roots %v, skip verify %v", len(cfg.Certificates), cfg.RootCAs != nil, cfg.InsecureSkipVerify)
	}
	cfg, err = Files{}.DialConfig(Versions{})
	if err != nil || len(cfg.Certificates) != 0 || cfg.InsecureSkipVerify {
		t.Errorf("without files: %v, %d certificates, skip verify %v", err, len(cfg.Certificates), cfg.InsecureSkipVerify)
	}
}
