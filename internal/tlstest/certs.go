// Package tlstest writes the certificates that TLS tests need — a CA, a
// member certificate and client certificates signed by it — into a test's
// temporary directory. No key is ever committed.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Certificates are the PEM files of a test CA, a server certificate for
// 127.0.0.1 and localhost (usable as a client certificate too, as a peer
// presents its certificate to the peers it dials) and a client certificate
// with the common name "client", all signed by the CA.
type Certificates struct {
	CAFile                string
	ServerCert, ServerKey string
	ClientCert, ClientKey string

	dir   string
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
}

// NewCertificates writes a fresh set of certificates into a temporary
// directory.
func NewCertificates(t testing.TB) Certificates {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	caTemplate := &x509.Certificate{
		SerialNumber:          newSerial(t),
		Subject:               pkix.Name{CommonName: "cairn test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	certs := Certificates{CAFile: filepath.Join(dir, "ca.pem"), dir: dir, ca: ca, caKey: caKey}
	writePEM(t, certs.CAFile, "CERTIFICATE", caDER)
	certs.ServerCert, certs.ServerKey = certs.IssueMember(t, "server")
	certs.ClientCert, certs.ClientKey = certs.IssueClient(t, "client")
	return certs
}

// IssueClient writes a client certificate whose common name is cn (with
// --client-cert-auth, the user a request without a token runs as).
func (c Certificates) IssueClient(t testing.TB, cn string) (certFile, keyFile string) {
	t.Helper()
	return c.issue(t, cn, defaultHosts, x509.ExtKeyUsageClientAuth)
}

// ClientConfig is a TLS configuration that trusts the CA and presents the
// client certificate.
func (c Certificates) ClientConfig(t testing.TB) *tls.Config {
	t.Helper()
	return c.ConfigFor(t, c.ClientCert, c.ClientKey)
}

// ConfigFor is a TLS configuration that trusts the CA and presents the
// certificate in certFile, or none when certFile is "".
func (c Certificates) ConfigFor(t testing.TB, certFile, keyFile string) *tls.Config {
	t.Helper()
	pemData, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemData)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

// defaultHosts are the SANs of the certificates: the loopback address and
// its name.
var defaultHosts = []string{"127.0.0.1", "localhost"}

// IssueMember writes a certificate for a member (server and client use)
// named cn, for 127.0.0.1 and localhost.
func (c Certificates) IssueMember(t testing.TB, cn string) (certFile, keyFile string) {
	t.Helper()
	return c.IssueMemberFor(t, cn, defaultHosts...)
}

// IssueMemberFor writes a member certificate named cn whose SANs are hosts
// (IP addresses or DNS names; none at all without hosts).
func (c Certificates) IssueMemberFor(t testing.TB, cn string, hosts ...string) (certFile, keyFile string) {
	t.Helper()
	return c.issue(t, cn, hosts, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
}

// Revoke writes a certificate revocation list, signed by the CA, that
// revokes the certificates in certFiles, and returns its path.
func (c Certificates) Revoke(t testing.TB, certFiles ...string) string {
	t.Helper()
	list := &x509.RevocationList{Number: newSerial(t), ThisUpdate: time.Now().Add(-time.Hour), NextUpdate: time.Now().Add(24 * time.Hour)}
	for _, f := range certFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(data)
		if block == nil {
			t.Fatalf("%s: no PEM data", f)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		list.RevokedCertificateEntries = append(list.RevokedCertificateEntries,
			x509.RevocationListEntry{SerialNumber: cert.SerialNumber, RevocationTime: time.Now()})
	}
	der, err := x509.CreateRevocationList(rand.Reader, list, c.ca, c.caKey)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.dir, "revoked.crl")
	writePEM(t, path, "X509 CRL", der)
	return path
}

// issue writes a certificate for hosts named cn, and its key, as cn.pem
// and cn-key.pem.
func (c Certificates) issue(t testing.TB, cn string, hosts []string, usage ...x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	template := &x509.Certificate{
		SerialNumber: newSerial(t),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usage,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, c.ca, &key.PublicKey, c.caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(c.dir, cn+".pem"), filepath.Join(c.dir, cn+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func newSerial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
