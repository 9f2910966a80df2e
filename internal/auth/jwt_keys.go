package auth

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// The PEM key files of sign-method: a public key as PKIX, PKCS #1 or an
// X.509 certificate; a private key as PKCS #8, PKCS #1 or SEC 1.

type publicKey interface{ Equal(crypto.PublicKey) bool }

type privateKey interface{ Public() crypto.PublicKey }

// loadKeyPair parses the contents of the pub-key and priv-key files into
// keys of types P and K. Either may be empty: without a private key the
// member only verifies tokens; without a public key it verifies with the
// private key's. kind names the key type in errors, as etcd's do.
func loadKeyPair[P publicKey, K privateKey](pubPEM, privPEM []byte, kind string) (pub P, priv K, err error) {
	if len(pubPEM) == 0 && len(privPEM) == 0 {
		return pub, priv, ErrMissingKey
	}
	if len(privPEM) > 0 {
		k, err := parsePrivateKeyPEM(privPEM)
		if err != nil {
			return pub, priv, fmt.Errorf("priv-key: %w", err)
		}
		var ok bool
		if priv, ok = k.(K); !ok {
			return pub, priv, fmt.Errorf("priv-key: key is not a valid %s private key", kind)
		}
		if len(pubPEM) == 0 {
			return priv.Public().(P), priv, nil
		}
	}
	k, err := parsePublicKeyPEM(pubPEM)
	if err != nil {
		return pub, priv, fmt.Errorf("pub-key: %w", err)
	}
	var ok bool
	if pub, ok = k.(P); !ok {
		return pub, priv, fmt.Errorf("pub-key: key is not a valid %s public key", kind)
	}
	if len(privPEM) > 0 && !pub.Equal(priv.Public()) {
		return pub, priv, ErrKeyMismatch
	}
	return pub, priv, nil
}

func parsePublicKeyPEM(b []byte) (crypto.PublicKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, ErrKeyMustBePEM
	}
	if k, err := x509.ParsePKIXPublicKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PublicKey(block.Bytes); err == nil {
		return k, nil
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("neither a public key nor a certificate: %w", err)
	}
	return cert.PublicKey, nil
}

func parsePrivateKeyPEM(b []byte) (any, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, ErrKeyMustBePEM
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, errors.New("not a PKCS #8, PKCS #1 or SEC 1 private key")
}
