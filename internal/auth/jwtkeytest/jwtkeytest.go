// Package jwtkeytest makes throwaway key pairs for the JWT sign methods of
// --auth-token, as PEM files or bytes, for tests: no key is ever committed.
package jwtkeytest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// KeyPair is a PEM public key (PKIX) and private key (PKCS #8); for the
// HS* methods, Priv is a random secret and Pub is empty.
type KeyPair struct {
	Pub, Priv []byte
}

// New makes a fresh key pair for a sign method: RS*/PS* (RSA 2048),
// ES256/384/512 (P-256/384/521), EdDSA (Ed25519), HS* (a secret).
func New(t testing.TB, method string) KeyPair {
	t.Helper()
	var signer crypto.Signer
	var err error
	switch {
	case strings.HasPrefix(method, "HS"):
		secret := make([]byte, 32)
		rand.Read(secret)
		return KeyPair{Priv: secret}
	case strings.HasPrefix(method, "RS"), strings.HasPrefix(method, "PS"):
		signer, err = rsa.GenerateKey(rand.Reader, 2048)
	case method == "ES256":
		signer, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case method == "ES384":
		signer, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case method == "ES512":
		signer, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case method == "EdDSA":
		_, signer, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("jwtkeytest: no keys for sign method %q", method)
	}
	if err != nil {
		t.Fatal(err)
	}
	priv, err := x509.MarshalPKCS8PrivateKey(signer)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(signer.Public())
	if err != nil {
		t.Fatal(err)
	}
	return KeyPair{
		Pub:  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
		Priv: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: priv}),
	}
}

// Write writes the pair into dir as <name>.pub and <name>.key and returns
// their paths; the .pub file is empty for an HS* secret.
func (k KeyPair) Write(t testing.TB, dir, name string) (pubPath, privPath string) {
	t.Helper()
	pubPath, privPath = filepath.Join(dir, name+".pub"), filepath.Join(dir, name+".key")
	for path, b := range map[string][]byte{pubPath: k.Pub, privPath: k.Priv} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return pubPath, privPath
}

// Option is the --auth-token value that signs with the pair's files in dir:
// "jwt,pub-key=...,priv-key=...,sign-method=METHOD" (no pub-key for HS*).
func (k KeyPair) Option(t testing.TB, dir, method string) string {
	t.Helper()
	pub, priv := k.Write(t, dir, method)
	if len(k.Pub) == 0 {
		return "jwt,priv-key=" + priv + ",sign-method=" + method
	}
	return "jwt,pub-key=" + pub + ",priv-key=" + priv + ",sign-method=" + method
}
