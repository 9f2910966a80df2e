package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"math/big"
)

// ecdsaKeys are ES* keys. A key on another curve than the method's is
// accepted at start, as etcd does, and then neither signs nor verifies.
type ecdsaKeys struct {
	hash  crypto.Hash
	curve elliptic.Curve
	pub   *ecdsa.PublicKey
	priv  *ecdsa.PrivateKey
}

func ecdsaLoader(h crypto.Hash, curve elliptic.Curve) func(pub, priv []byte) (jwtKeys, error) {
	return func(pub, priv []byte) (jwtKeys, error) {
		k := &ecdsaKeys{hash: h, curve: curve}
		var err error
		k.pub, k.priv, err = loadKeyPair[*ecdsa.PublicKey, *ecdsa.PrivateKey](pub, priv, "ECDSA")
		return k, err
	}
}

// size is the length of r and of s in a signature: R || S, big-endian.
func (k *ecdsaKeys) size() int { return (k.curve.Params().BitSize + 7) / 8 }

func (k *ecdsaKeys) sign(input []byte) ([]byte, error) {
	if k.priv == nil {
		return nil, ErrVerifyOnly
	}
	if k.priv.Curve != k.curve {
		return nil, ErrKeyInvalid
	}
	r, s, err := ecdsa.Sign(rand.Reader, k.priv, digest(k.hash, input))
	if err != nil {
		return nil, err
	}
	n := k.size()
	sig := make([]byte, 2*n)
	r.FillBytes(sig[:n])
	s.FillBytes(sig[n:])
	return sig, nil
}

func (k *ecdsaKeys) verify(input, sig []byte) bool {
	n := k.size()
	if k.pub.Curve != k.curve || len(sig) != 2*n {
		return false
	}
	r, s := new(big.Int).SetBytes(sig[:n]), new(big.Int).SetBytes(sig[n:])
	return ecdsa.Verify(k.pub, digest(k.hash, input), r, s)
}
