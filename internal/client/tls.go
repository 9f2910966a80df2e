package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSFiles names the files of a TLS client configuration, as etcdctl's
// --cacert, --cert and --key flags do.
type TLSFiles struct {
	CAFile             string // PEM bundle of the CAs that sign server certificates
	CertFile           string // client certificate, for servers that verify clients
	KeyFile            string // key of CertFile
	InsecureSkipVerify bool   // accept any server certificate
}

// Empty says whether no TLS setting is given at all.
func (f TLSFiles) Empty() bool {
	return f == TLSFiles{}
}

// Config loads the files into a tls.Config.
func (f TLSFiles) Config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: f.InsecureSkipVerify}
	if f.CAFile != "" {
		pem, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read CA bundle: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no certificate found in %s", f.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, errors.New("a client certificate needs both a certificate file and a key file")
	}
	if f.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
