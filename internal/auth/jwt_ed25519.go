package auth

import (
	"crypto/ed25519"
)

// ed25519Keys are EdDSA keys (Ed25519, the only curve etcd takes).
type ed25519Keys struct {
	pub  ed25519.PublicKey
	priv ed25519.PrivateKey
}

func loadEd25519Keys(pub, priv []byte) (jwtKeys, error) {
	k := &ed25519Keys{}
	var err error
	k.pub, k.priv, err = loadKeyPair[ed25519.PublicKey, ed25519.PrivateKey](pub, priv, "Ed25519")
	return k, err
}

func (k *ed25519Keys) sign(input []byte) ([]byte, error) {
	if k.priv == nil {
		return nil, ErrVerifyOnly
	}
	return ed25519.Sign(k.priv, input), nil
}

func (k *ed25519Keys) verify(input, sig []byte) bool {
	return len(sig) == ed25519.SignatureSize && ed25519.Verify(k.pub, input, sig)
}
