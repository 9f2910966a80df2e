package auth

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

// TestKeyFileFormats: besides PKIX and PKCS #8, the formats openssl and
// other tools write: PKCS #1 RSA keys, SEC 1 EC keys, a certificate as the
// public key.
func TestKeyFileFormats(t *testing.T) {
	pemOf := func(typ string, b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}) }
	parse := func(b []byte) any {
		k, err := x509.ParsePKCS8PrivateKey(b)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	rsaKey := parse(mustPEMBytes(t, keyPair(t, "RS256", "a").Priv)).(*rsa.PrivateKey)
	ecKey := parse(mustPEMBytes(t, keyPair(t, "ES256", "a").Priv)).(*ecdsa.PrivateKey)
	sec1, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cairn"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	cert, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ecKey.PublicKey, ecKey)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		method    string
		pub, priv []byte
	}{
		"PKCS #1 RSA keys":         {"RS256", pemOf("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&rsaKey.PublicKey)), pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey))},
		"SEC 1 EC key, no pub-key": {"ES256", nil, pemOf("EC PRIVATE KEY", sec1)},
		"certificate as pub-key":   {"ES256", pemOf("CERTIFICATE", cert), pemOf("EC PRIVATE KEY", sec1)},
	} {
		keys, err := signMethods[c.method](c.pub, c.priv)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		sig, err := keys.sign([]byte("x"))
		if err != nil || !keys.verify([]byte("x"), sig) {
			t.Errorf("%s: sign and verify: %v", name, err)
		}
	}
}

func mustPEMBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatal("not PEM")
	}
	return block.Bytes
}
