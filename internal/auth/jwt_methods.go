package auth

import (
	"crypto"
	"crypto/elliptic"
	_ "crypto/sha256" // registers crypto.SHA256
	_ "crypto/sha512" // registers crypto.SHA384 and SHA512
)

// The JWS algorithms (RFC 7518) etcd accepts as sign-method, each as the
// loader of its keys: pub and priv are the contents of the pub-key and
// priv-key files, either of which may be empty.
var signMethods = map[string]func(pub, priv []byte) (jwtKeys, error){
	"RS256": rsaLoader(crypto.SHA256, false),
	"RS384": rsaLoader(crypto.SHA384, false),
	"RS512": rsaLoader(crypto.SHA512, false),
	"PS256": rsaLoader(crypto.SHA256, true),
	"PS384": rsaLoader(crypto.SHA384, true),
	"PS512": rsaLoader(crypto.SHA512, true),
	"ES256": ecdsaLoader(crypto.SHA256, elliptic.P256()),
	"ES384": ecdsaLoader(crypto.SHA384, elliptic.P384()),
	"ES512": ecdsaLoader(crypto.SHA512, elliptic.P521()),
	"EdDSA": loadEd25519Keys,
	"HS256": hmacLoader(crypto.SHA256),
	"HS384": hmacLoader(crypto.SHA384),
	"HS512": hmacLoader(crypto.SHA512),
}

// jwtKeys signs and verifies the signing input of a token (the encoded
// header and claims) with one algorithm.
type jwtKeys interface {
	// sign fails with ErrVerifyOnly when there is no private key.
	sign(input []byte) ([]byte, error)
	verify(input, sig []byte) bool
}

// digest is the hash h of input.
func digest(h crypto.Hash, input []byte) []byte {
	d := h.New()
	d.Write(input)
	return d.Sum(nil)
}
