package auth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
)

// The compact serialization of a JWS (RFC 7515): base64url(header) "."
// base64url(claims) "." base64url(signature), no padding.

var b64 = base64.RawURLEncoding

// jwtHeader is the JOSE header etcd writes.
type jwtHeader struct {
	Alg string `json:"alg"`
	Typ string `json:"typ"`
}

// jwtClaims are the claims of etcd's tokens, in the order etcd writes them.
type jwtClaims struct {
	Exp      int64  `json:"exp"`
	Revision uint64 `json:"revision"`
	Username string `json:"username"`
}

// encodeJWT returns the signed token of claims.
func encodeJWT(alg string, claims jwtClaims, sign func(input []byte) ([]byte, error)) (string, error) {
	h, err := json.Marshal(jwtHeader{Alg: alg, Typ: "JWT"})
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
	sig, err := sign([]byte(input))
	if err != nil {
		return "", err
	}
	return input + "." + b64.EncodeToString(sig), nil
}

var errMalformedJWT = errors.New("malformed JWT")

// parsedJWT is a token split and decoded, its signature not yet checked.
type parsedJWT struct {
	alg    string
	input  []byte // the signed part: encoded header "." encoded claims
	sig    []byte
	claims map[string]any
}

// parseJWT splits and decodes a token: three base64url parts, a header
// object with a string "alg", a claims object.
func parseJWT(token string) (parsedJWT, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return parsedJWT{}, errMalformedJWT
	}
	var header map[string]any
	if err := decodeJSONPart(parts[0], &header); err != nil {
		return parsedJWT{}, err
	}
	alg, ok := header["alg"].(string)
	if !ok {
		return parsedJWT{}, errMalformedJWT
	}
	p := parsedJWT{alg: alg, input: []byte(parts[0] + "." + parts[1])}
	if err := decodeJSONPart(parts[1], &p.claims); err != nil {
		return parsedJWT{}, err
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil {
		return parsedJWT{}, errMalformedJWT
	}
	p.sig = sig
	return p, nil
}

// decodeJSONPart decodes one base64url part holding a JSON object.
func decodeJSONPart(part string, v *map[string]any) error {
	b, err := b64.DecodeString(part)
	if err != nil {
		return errMalformedJWT
	}
	if err := json.Unmarshal(b, v); err != nil || *v == nil {
		return errMalformedJWT
	}
	return nil
}
