package servertls

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

func TestAutoTLSGeneratesOnceAndKeeps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fixtures", "client")
	log := slog.New(slog.DiscardHandler)
	asked := Files{AutoTLS: true, ClientCertAuth: true, TrustedCAFile: "ca.pem"}
	got, err := asked.WithAutoTLS(dir, []string{"127.0.0.1", "localhost"}, 0, log)
	if err != nil {
		t.Fatal(err)
	}
	want := Files{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"), AutoTLS: true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("files %+v, want %+v (client cert auth and CA dropped)", got, want)
	}
	cert := loadCert(t, got.CertFile, got.KeyFile)
	if err := cert.VerifyHostname("127.0.0.1"); err != nil {
		t.Error(err)
	}
	if err := cert.VerifyHostname("localhost"); err != nil {
		t.Error(err)
	}
	if life := cert.NotAfter.Sub(cert.NotBefore); life != year {
		t.Errorf("valid for %v, want a year (--self-signed-cert-validity 0 means 1)", life)
	}
	if !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		t.Errorf("extended key usage %v lacks server authentication", cert.ExtKeyUsage)
	}
	if info, err := os.Stat(got.KeyFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, mode %v", err, info.Mode())
	}

	first, _ := os.ReadFile(got.CertFile)
	if _, err := asked.WithAutoTLS(dir, []string{"127.0.0.1"}, 0, log); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(got.CertFile); string(again) != string(first) {
		t.Error("a second start generated a new certificate; etcd keeps the first")
	}
}

func TestGivenCertificateWinsOverAutoTLS(t *testing.T) {
	asked := Files{AutoTLS: true, CertFile: "c.pem", KeyFile: "k.pem"}
	dir := t.TempDir()
	got, err := asked.WithAutoTLS(dir, []string{"127.0.0.1"}, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, Files{CertFile: "c.pem", KeyFile: "k.pem"}) {
		t.Errorf("files %+v", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("generated %v anyway", entries)
	}
}

// TestAutoTLSValidity: --self-signed-cert-validity is the years the
// generated certificate is valid.
func TestAutoTLSValidity(t *testing.T) {
	dir := t.TempDir()
	got, err := Files{AutoTLS: true}.WithAutoTLS(dir, []string{"127.0.0.1"}, 3, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cert := loadCert(t, got.CertFile, got.KeyFile)
	if life := cert.NotAfter.Sub(cert.NotBefore); life != 3*year {
		t.Errorf("valid for %v, want 3 years", life)
	}
}

// loadCert loads the certificate in certFile, with its key.
func loadCert(t *testing.T, certFile, keyFile string) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
