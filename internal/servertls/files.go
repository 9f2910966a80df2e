// Package servertls builds a member's TLS configurations from etcd's
// security flags: the server side of its client and peer listeners, and
// the client side it dials its peers with. It knows nothing of listeners;
// it loads files and says what is wrong with them.
package servertls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"
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
	// ClientCertFile and ClientKeyFile (--peer-client-cert-file ...) are
	// the certificate presented when dialling, if not CertFile's.
	ClientCertFile string
	ClientKeyFile  string
	// CRLFile (--client-crl-file, --peer-crl-file) lists revoked
	// certificates: a connection presenting one is refused. It is read
	// at each handshake, so that a new list takes effect at once.
	CRLFile string
	// AllowedCNs and AllowedHostnames (--peer-cert-allowed-cn,
	// --peer-cert-allowed-hostname, --client-cert-allowed-hostname): a
	// client certificate must have one of these common names, or be valid
	// for one of these host names.
	AllowedCNs       []string
	AllowedHostnames []string
	// VerifyClientSAN checks that a client certificate with IP or DNS
	// SANs names the address the connection comes from (etcd checks its
	// peers so unless --peer-skip-client-san-verification).
	VerifyClientSAN bool
}

// HasCert reports whether a certificate and its key are given.
func (f Files) HasCert() bool { return f.CertFile != "" && f.KeyFile != "" }

// Check reports a certificate given without its key, or the reverse, and
// a revocation list that cannot be read.
func (f Files) Check() error {
	if (f.CertFile == "") != (f.KeyFile == "") {
		return fmt.Errorf("--%skey-file and --%scert-file must both be present [key: %s, cert: %s]", f.Prefix, f.Prefix, f.KeyFile, f.CertFile)
	}
	if (f.ClientCertFile == "") != (f.ClientKeyFile == "") {
		return fmt.Errorf("--%sclient-key-file and --%sclient-cert-file must both be present [key: %s, cert: %s]", f.Prefix, f.Prefix, f.ClientKeyFile, f.ClientCertFile)
	}
	if f.CRLFile != "" {
		if _, err := f.revoked(); err != nil {
			return err
		}
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
	if f.CRLFile != "" || len(f.AllowedCNs) > 0 || len(f.AllowedHostnames) > 0 {
		cfg.VerifyPeerCertificate = f.verifyClient
	}
	if f.VerifyClientSAN && cfg.ClientAuth == tls.RequireAndVerifyClientCert {
		base := cfg.Clone()
		cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			c := base.Clone()
			remote := hello.Conn.RemoteAddr().String()
			c.VerifyPeerCertificate = func(raw [][]byte, chains [][]*x509.Certificate) error {
				if base.VerifyPeerCertificate != nil {
					if err := base.VerifyPeerCertificate(raw, chains); err != nil {
						return err
					}
				}
				return verifySAN(raw, remote)
			}
			return c, nil
		}
	}
	return cfg, nil
}

// verifySAN checks that the client certificate in raw, if it has IP or
// DNS SANs, names the host of remote (an IP address and port): one of its
// IP addresses, or a DNS name that resolves to it. The errors are etcd's.
func verifySAN(raw [][]byte, remote string) error {
	if len(raw) == 0 {
		return nil
	}
	leaf, err := x509.ParseCertificate(raw[0])
	if err != nil {
		return err
	}
	if len(leaf.IPAddresses) == 0 && len(leaf.DNSNames) == 0 {
		return nil
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ipErr := leaf.VerifyHostname(host)
	if ipErr == nil {
		return nil
	}
	if len(leaf.DNSNames) == 0 {
		return ipErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var lookupErrs []string
	for _, name := range leaf.DNSNames {
		addrs, err := net.DefaultResolver.LookupHost(ctx, name)
		if err != nil {
			lookupErrs = append(lookupErrs, err.Error())
			continue
		}
		if slices.Contains(addrs, host) {
			return nil
		}
	}
	msg := fmt.Sprintf("tls: %q does not match any of DNSNames %q", host, leaf.DNSNames)
	if len(lookupErrs) > 0 {
		msg += " (" + strings.Join(lookupErrs, "; ") + ")"
	}
	return errors.New(msg)
}

// verifyClient refuses a client certificate the CRL file revokes, or one
// that has none of the allowed common names or host names.
func (f Files) verifyClient(rawCerts [][]byte, _ [][]*x509.Certificate) error {
	if len(rawCerts) == 0 {
		if len(f.AllowedCNs) > 0 || len(f.AllowedHostnames) > 0 {
			return fmt.Errorf("--%scert-allowed-cn/hostname: no client certificate", f.side())
		}
		return nil
	}
	var chain []*x509.Certificate
	for _, raw := range rawCerts {
		c, err := x509.ParseCertificate(raw)
		if err != nil {
			return err
		}
		chain = append(chain, c)
	}
	if f.CRLFile != "" {
		revoked, err := f.revoked()
		if err != nil {
			return err
		}
		for _, c := range chain {
			if revoked[c.SerialNumber.String()] {
				return fmt.Errorf("certificate with serial %x (%q) is revoked by --%scrl-file", c.SerialNumber, c.Subject.CommonName, f.side())
			}
		}
	}
	leaf := chain[0]
	if len(f.AllowedCNs) > 0 && !slices.Contains(f.AllowedCNs, leaf.Subject.CommonName) {
		return fmt.Errorf("client certificate authentication failed: common name %q is not among --%scert-allowed-cn %v", leaf.Subject.CommonName, f.side(), f.AllowedCNs)
	}
	if len(f.AllowedHostnames) > 0 && !slices.ContainsFunc(f.AllowedHostnames, func(h string) bool { return leaf.VerifyHostname(h) == nil }) {
		return fmt.Errorf("client certificate authentication failed: the certificate is valid for none of --%scert-allowed-hostname %v", f.side(), f.AllowedHostnames)
	}
	return nil
}

// side is what the CRL and allowed-name flags of this side start with
// after "--": "client-" or "peer-".
func (f Files) side() string {
	if f.Prefix == "" {
		return "client-"
	}
	return f.Prefix
}

// revoked returns the serial numbers (in decimal) the CRL file revokes; the
// file is PEM or DER.
func (f Files) revoked() (map[string]bool, error) {
	data, err := os.ReadFile(f.CRLFile)
	if err != nil {
		return nil, fmt.Errorf("load --%scrl-file: %w", f.side(), err)
	}
	if block, _ := pem.Decode(data); block != nil {
		data = block.Bytes
	}
	crl, err := x509.ParseRevocationList(data)
	if err != nil {
		return nil, fmt.Errorf("load --%scrl-file %s: %w", f.side(), f.CRLFile, err)
	}
	out := map[string]bool{}
	for _, e := range crl.RevokedCertificateEntries {
		out[e.SerialNumber.String()] = true
	}
	return out, nil
}

// DialConfig is the configuration a member dials its peers with: it
// presents its own certificate (the client one, if given), if it has one, and verifies theirs against
// the trusted CA file (the system's CAs without one); a self-signed
// certificate of its own means the peers' are self-signed too, and not
// verified.
func (f Files) DialConfig(v Versions) (*tls.Config, error) {
	if f.ClientCertFile != "" {
		f.CertFile, f.KeyFile = f.ClientCertFile, f.ClientKeyFile
	}
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
