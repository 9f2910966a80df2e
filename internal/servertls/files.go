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
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"time"
)

// Files are the TLS flags of one side of a member: the client side
// (--cert-file, --key-file, --trusted-ca-file, --client-cert-auth,
// --auto-tls) or the peer side (the same flags with "peer-").
//
// The configurations built from them take the certificates, the CA
// bundles and the CRL as they are on disk, read again at most once a
// second as handshakes come: rotated files need no restart. New files
// that cannot be used are logged and the previous ones kept.
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
	// certificates: a connection presenting one is refused.
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
	// Log gets the files that changed on disk and cannot be used;
	// slog.Default() if nil.
	Log *slog.Logger
}

func (f Files) logger() *slog.Logger {
	if f.Log == nil {
		return slog.Default()
	}
	return f.Log
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
	cfg, cert, cas, err := f.load(v, "cert-file", "key-file")
	if err != nil {
		return nil, err
	}
	if cert == nil {
		return nil, fmt.Errorf("no --%scert-file and --%skey-file given", f.Prefix, f.Prefix)
	}
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert.current(), nil }
	if f.ClientCertAuth || cas != nil {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if f.CRLFile != "" || len(f.AllowedCNs) > 0 || len(f.AllowedHostnames) > 0 {
		var crl *reloader[map[string]bool]
		if f.CRLFile != "" {
			crl, err = newReloader(f.logger(), []string{"--" + f.side() + "crl-file"}, []string{f.CRLFile},
				func(contents [][]byte, err error) (map[string]bool, error) { return f.parseCRL(contents[0], err) })
			if err != nil {
				return nil, err
			}
		}
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error { return f.verifyClient(raw, crl) }
	}
	sanChecked := f.VerifyClientSAN && cfg.ClientAuth == tls.RequireAndVerifyClientCert
	if cas == nil && !sanChecked {
		return cfg, nil
	}
	// The configuration GetConfigForClient returns replaces the listener's
	// for the handshake, application protocols included: those that
	// net/http's ServeTLS would offer are set before it is copied.
	cfg.NextProtos = []string{"h2", "http/1.1"}
	base := cfg.Clone()
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		c := base.Clone()
		if cas != nil {
			// Go verifies client certificates, and resumed sessions, against
			// ClientCAs, which cannot change once the listener has the
			// configuration: each handshake gets the bundle as it is now.
			c.ClientCAs = cas.current()
		}
		if sanChecked {
			remote := hello.Conn.RemoteAddr().String()
			c.VerifyPeerCertificate = func(raw [][]byte, chains [][]*x509.Certificate) error {
				if base.VerifyPeerCertificate != nil {
					if err := base.VerifyPeerCertificate(raw, chains); err != nil {
						return err
					}
				}
				return verifySAN(raw, remote)
			}
		}
		return c, nil
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

// verifyClient refuses a client certificate the CRL revokes (crl is nil
// without a CRL file), or one that has none of the allowed common names or
// host names.
func (f Files) verifyClient(rawCerts [][]byte, crl *reloader[map[string]bool]) error {
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
	if crl != nil {
		revoked := crl.current()
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

// revoked returns the serial numbers (in decimal) the CRL file revokes.
func (f Files) revoked() (map[string]bool, error) {
	return f.parseCRL(os.ReadFile(f.CRLFile))
}

// parseCRL returns the serial numbers (in decimal) that data, the CRL file
// as PEM or DER, revokes; err is the error reading it.
func (f Files) parseCRL(data []byte, err error) (map[string]bool, error) {
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
// presents its own certificate (the client one, if given), if it has one,
// and verifies theirs against the trusted CA file (the system's CAs
// without one); a self-signed certificate of its own means the peers' are
// self-signed too, and not verified.
func (f Files) DialConfig(v Versions) (*tls.Config, error) {
	certFlag, keyFlag := "cert-file", "key-file"
	if f.ClientCertFile != "" {
		f.CertFile, f.KeyFile = f.ClientCertFile, f.ClientKeyFile
		certFlag, keyFlag = "client-cert-file", "client-key-file"
	}
	cfg, cert, cas, err := f.load(v, certFlag, keyFlag)
	if err != nil {
		return nil, err
	}
	if cert != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert.current(), nil }
	}
	switch {
	case f.AutoTLS:
		cfg.InsecureSkipVerify = true
	case cas != nil:
		// RootCAs cannot change once the HTTP transport holds the
		// configuration: the peer's certificate is verified here instead,
		// against the bundle as it is now.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error { return verifyServer(cs, cas.current()) }
	}
	return cfg, nil
}

// ForHost is cfg, a DialConfig, to dial host with: its server name is host,
// and its verification of the peer checks that the certificate is for
// host, an IP address too (Go leaves an IP address out of the connection
// state, as SNI does not carry it).
func ForHost(cfg *tls.Config, host string) *tls.Config {
	c := cfg.Clone()
	if c.ServerName == "" {
		c.ServerName = host
	}
	if verify := c.VerifyConnection; verify != nil {
		name := c.ServerName
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if cs.ServerName == "" {
				cs.ServerName = name
			}
			return verify(cs)
		}
	}
	return c
}

// verifyServer makes the checks Go makes of a server's certificate chain
// without InsecureSkipVerify, with roots as RootCAs, and returns the same
// error. The certificate must be for cs.ServerName, which ForHost sets.
func verifyServer(cs tls.ConnectionState, roots *x509.CertPool) error {
	certs := cs.PeerCertificates
	if len(certs) == 0 {
		return errors.New("tls: server presented no certificate")
	}
	if cs.ServerName == "" {
		return errors.New("tls: no server name to verify the peer's certificate for")
	}
	opts := x509.VerifyOptions{Roots: roots, DNSName: cs.ServerName, Intermediates: x509.NewCertPool()}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(opts); err != nil {
		return &tls.CertificateVerificationError{UnverifiedCertificates: certs, Err: err}
	}
	return nil
}

// load returns a configuration with the versions, and the certificate and
// the trusted CAs as they are on disk, each nil if its files are not
// given. certFlag and keyFlag, after --PREFIX, name the certificate's
// files in the log.
func (f Files) load(v Versions, certFlag, keyFlag string) (*tls.Config, *reloader[*tls.Certificate], *reloader[*x509.CertPool], error) {
	cfg, err := v.config()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := f.Check(); err != nil {
		return nil, nil, nil, err
	}
	var cert *reloader[*tls.Certificate]
	if f.HasCert() {
		flags := []string{"--" + f.Prefix + certFlag, "--" + f.Prefix + keyFlag}
		cert, err = newReloader(f.logger(), flags, []string{f.CertFile, f.KeyFile}, f.parseKeyPair)
		if err != nil {
			return nil, nil, nil, err
		}
	}
	if f.TrustedCAFile == "" {
		return cfg, cert, nil, nil
	}
	cas, err := newReloader(f.logger(), []string{"--" + f.Prefix + "trusted-ca-file"}, []string{f.TrustedCAFile}, f.parseCAs)
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, cert, cas, nil
}

// parseKeyPair is the certificate and key files' contents as a
// certificate; err is the error reading them.
func (f Files) parseKeyPair(contents [][]byte, err error) (*tls.Certificate, error) {
	var cert tls.Certificate
	if err == nil {
		cert, err = tls.X509KeyPair(contents[0], contents[1])
	}
	if err != nil {
		return nil, fmt.Errorf("load --%scert-file %s and --%skey-file %s: %w", f.Prefix, f.CertFile, f.Prefix, f.KeyFile, err)
	}
	return &cert, nil
}

// parseCAs is the trusted CA file's contents as a pool; err is the error
// reading it.
func (f Files) parseCAs(contents [][]byte, err error) (*x509.CertPool, error) {
	if err != nil {
		return nil, fmt.Errorf("load --%strusted-ca-file: %w", f.Prefix, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(contents[0]) {
		return nil, fmt.Errorf("load --%strusted-ca-file: no certificate found in %s", f.Prefix, f.TrustedCAFile)
	}
	return pool, nil
}
