package auth

import (
	"crypto"
	"crypto/hmac"
)

// hmacKeys are HS* keys: the priv-key file's bytes, as they are, are the
// shared secret; pub-key means nothing.
type hmacKeys struct {
	hash   crypto.Hash
	secret []byte
}

func hmacLoader(h crypto.Hash) func(pub, priv []byte) (jwtKeys, error) {
	return func(_, priv []byte) (jwtKeys, error) {
		if len(priv) == 0 {
			return nil, ErrMissingKey
		}
		return &hmacKeys{hash: h, secret: priv}, nil
	}
}

func (k *hmacKeys) sign(input []byte) ([]byte, error) {
	m := hmac.New(k.hash.New, k.secret)
	m.Write(input)
	return m.Sum(nil), nil
}

func (k *hmacKeys) verify(input, sig []byte) bool {
	want, _ := k.sign(input)
	return hmac.Equal(want, sig)
}
