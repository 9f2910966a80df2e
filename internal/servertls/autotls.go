package servertls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// year is the unit of etcd's --self-signed-cert-validity.
const year = 365 * 24 * time.Hour

// WithAutoTLS resolves --auto-tls, with certificates valid for
// validityYears (--self-signed-cert-validity; 0 means 1). Without it, or with a certificate
// given (which wins, as in etcd), f is returned as it is. Otherwise f gets
// a self-signed certificate for hosts, kept in dir as cert.pem and key.pem
// (etcd keeps them in <data-dir>/fixtures/client and fixtures/peer) and
// used again on the next start. A self-signed certificate cannot vouch
// for clients: client certificate authentication and the trusted CA file
// are dropped.
func (f Files) WithAutoTLS(dir string, hosts []string, validityYears uint, log *slog.Logger) (Files, error) {
	if !f.AutoTLS {
		return f, nil
	}
	if f.CertFile != "" || f.KeyFile != "" {
		log.Warn(fmt.Sprintf("ignoring --%sauto-tls since certs given", f.Prefix))
		f.AutoTLS = false
		return f, nil
	}
	if f.ClientCertAuth || f.TrustedCAFile != "" {
		log.Warn(fmt.Sprintf("--%sauto-tls: ignoring --%sclient-cert-auth and --%strusted-ca-file, which a self-signed certificate cannot serve", f.Prefix, f.Prefix, f.Prefix))
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if !exists(certFile) || !exists(keyFile) {
		if err := writeSelfSigned(certFile, keyFile, hosts, time.Duration(max(validityYears, 1))*year); err != nil {
			return f, fmt.Errorf("--%sauto-tls: %w", f.Prefix, err)
		}
		log.Info("generated a self-signed certificate", "cert-file", certFile, "key-file", keyFile, "hosts", hosts)
	}
	return Files{Prefix: f.Prefix, CertFile: certFile, KeyFile: keyFile, AutoTLS: true}, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// writeSelfSigned writes a new key and a certificate for hosts (IP
// addresses or DNS names) signed by that key, valid for validity.
func writeSelfSigned(certFile, keyFile string, hosts []string, validity time.Duration) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"cairn"}},
		NotBefore:             now,
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(certFile), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}
