package auth

import (
	"errors"
	"testing"
)

func TestEverySignMethodRoundTrips(t *testing.T) {
	input := []byte("header.claims")
	for _, m := range signMethodNames() {
		t.Run(m, func(t *testing.T) {
			kp := keyPair(t, m, "a")
			keys := loadKeys(t, m, kp.Pub, kp.Priv)
			sig, err := keys.sign(input)
			if err != nil {
				t.Fatal(err)
			}
			if !keys.verify(input, sig) {
				t.Fatal("its own signature does not verify")
			}
			if keys.verify([]byte("header.claimz"), sig) {
				t.Error("a signature verifies another input")
			}
			bad := append([]byte(nil), sig...)
			bad[len(bad)/2] ^= 1
			if keys.verify(input, bad) || keys.verify(input, sig[:len(sig)-1]) || keys.verify(input, nil) {
				t.Error("a damaged signature verifies")
			}
			other := keyPair(t, m, "b")
			if loadKeys(t, m, other.Pub, other.Priv).verify(input, sig) {
				t.Error("another key verifies the signature")
			}
			if len(kp.Pub) == 0 {
				return // HS*: the secret is both keys
			}
			verifier := loadKeys(t, m, kp.Pub, nil)
			if !verifier.verify(input, sig) {
				t.Error("the public key alone does not verify")
			}
			if _, err := verifier.sign(input); !errors.Is(err, ErrVerifyOnly) {
				t.Errorf("signing with the public key alone: %v, want %v", err, ErrVerifyOnly)
			}
			if !loadKeys(t, m, nil, kp.Priv).verify(input, sig) {
				t.Error("the private key alone does not verify")
			}
		})
	}
}

// TestECDSAOnAnotherCurve: etcd starts with ES384 and a P-256 key, then
// fails each login with "key is invalid"; so does cairn.
func TestECDSAOnAnotherCurve(t *testing.T) {
	kp := keyPair(t, "ES256", "a")
	keys := loadKeys(t, "ES384", kp.Pub, kp.Priv)
	if _, err := keys.sign([]byte("x")); !errors.Is(err, ErrKeyInvalid) || err.Error() != "key is invalid" {
		t.Errorf("signing ES384 with a P-256 key: %v", err)
	}
	sig, _ := loadKeys(t, "ES256", kp.Pub, kp.Priv).sign([]byte("x"))
	if keys.verify([]byte("x"), sig) {
		t.Error("ES384 verifies an ES256 signature")
	}
}
