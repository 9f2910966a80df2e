// Package servertls builds a member's TLS configurations from etcd's
// security flags: the server side of its client and peer listeners, and
// the client side it dials its peers with. It knows nothing of listeners;
// it loads files and says what is wrong with them.
package servertls

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// Files are the TLS flags of one side of a member: the client side
// (--cert-file, --key-file, --trusted-ca-file, --client-cert-auth,
// --auto-tls) or the peer side (the same flags with "peer-").
type Files struct {
	// Prefix is what the flags of this side start with after "--": "" for
	// the client side, "peer-" for the peer side. Errors name the flags.
	Prefix         string
	CertFile       string
	KeyFile        string
	TrustedCAFile  string
	ClientCertAuth bool
	// AutoTLS asks for a self-signed certificate when none is given; once
	// WithAutoTLS has generated one, it says the certificate is
	// self-signed, so that peers dialled with it are not verified.
	AutoTLS bool
}

// HasCert reports whether a certificate and its key are given.
func (f Files) HasCert() bool { return f.CertFile != "" && f.KeyFile != "" }

// Check reports a certificate given without its key, or the reverse.
func (f Files) Check() error {
	if (f.CertFile == "") != (f.KeyFile == "") {
		return fmt.Errorf("--%skey-file and --%scert-file must both be present [key: %s, cert: %s]", f.Prefix, f.Prefix, f.KeyFile, f.CertFile)
	}
	return nil
}

// ServerConfig is the configuration of a listener of this side. A trusted
// CA file makes client certificates required, with or without
// --client-cert-auth, as in etcd.
func (f Files) ServerConfig(v Versions) (*tls.Config, error) {
	cfg, cas, err := f.load(v)
	if err != nil {
		return nil, err
	}
	if len(cfg.Certificates) == 0 {
		return nil, fmt.Errorf("no --%scert-file and --%skey-file given", f.Prefix, f.Prefix)
	}
	cfg.ClientCAs = cas
	if f.ClientCertAuth || cas != nil {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// DialConfig is the configuration a member dials its peers with: it
// presents its own certificate, if it has one, and verifies theirs against
// the trusted CA file (the system's CAs without one); a self-signed
// certificate of its own means the peers' are self-signed too, and not
// verified.
func (f Files) DialConfig(v Versions) (*tls.Config, error) {
	cfg, cas, err := f.load(v)
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = cas
	cfg.InsecureSkipVerify = f.AutoTLS
	return cfg, nil
}

// load returns a configuration with the versions and the certificate, if
// one is given, and the trusted CAs, if a file is given.
func (f Files) load(v Versions) (*tls.Config, *x509.CertPool, error) {
	cfg, err := v.config()
	if err != nil {
		return nil, nil, err
	}
	if err := f.Check(); err != nil {
		return nil, nil, err
	}
	if f.HasCert() {
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("load --%scert-file %s and --%skey-file %s: %w", f.Prefix, f.CertFile, f.Prefix, f.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if f.TrustedCAFile == "" {
		return cfg, nil, nil
	}
	cas, err := f.loadCAs()
	return cfg, cas, err
}

func (f Files) loadCAs() (*x509.CertPool, error) {
	pem, err := os.ReadFile(f.TrustedCAFile)
	if err != nil {
		return nil, fmt.Errorf("load --%strusted-ca-file: %w", f.Prefix, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("load --%strusted-ca-file: no certificate found in %s", f.Prefix, f.TrustedCAFile)
	}
	return pool, nil
}
