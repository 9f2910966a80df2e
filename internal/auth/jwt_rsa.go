package auth

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
)

// rsaKeys are RSASSA-PKCS1-v1_5 (RS*) or RSASSA-PSS (PS*) keys.
type rsaKeys struct {
	hash crypto.Hash
	pss  bool
	pub  *rsa.PublicKey
	priv *rsa.PrivateKey
}

func rsaLoader(h crypto.Hash, pss bool) func(pub, priv []byte) (jwtKeys, error) {
	return func(pub, priv []byte) (jwtKeys, error) {
		k := &rsaKeys{hash: h, pss: pss}
		var err error
		k.pub, k.priv, err = loadKeyPair[*rsa.PublicKey, *rsa.PrivateKey](pub, priv, "RSA")
		return k, err
	}
}

func (k *rsaKeys) sign(input []byte) ([]byte, error) {
	if k.priv == nil {
		return nil, ErrVerifyOnly
	}
	if k.pss {
		return rsa.SignPSS(rand.Reader, k.priv, k.hash, digest(k.hash, input), &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	}
	return rsa.SignPKCS1v15(rand.Reader, k.priv, k.hash, digest(k.hash, input))
}

func (k *rsaKeys) verify(input, sig []byte) bool {
	if k.pss {
		// Any salt length, as etcd accepts; etcd and cairn sign with the
		// hash's length, as RFC 7518 asks.
		return rsa.VerifyPSS(k.pub, k.hash, digest(k.hash, input), sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthAuto}) == nil
	}
	return rsa.VerifyPKCS1v15(k.pub, k.hash, digest(k.hash, input), sig) == nil
}
