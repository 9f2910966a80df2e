package auth

import (
	"crypto"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestJWTLooksLikeEtcds: the header and claims, byte for byte, of the
// tokens etcd 3.7.3 issues (decoded from real ones).
func TestJWTLooksLikeEtcds(t *testing.T) {
	for _, m := range signMethodNames() {
		j, _ := newTestJWT(t, m, "a")
		tok, err := j.assign("ignored", 99, "alice", 7)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(tok, ".")
		if len(parts) != 3 {
			t.Fatalf("%s: token %q is not three parts", m, tok)
		}
		header, _ := base64.RawURLEncoding.DecodeString(parts[0])
		claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
		wantClaims := fmt.Sprintf(`{"exp":%d,"revision":7,"username":"alice"}`, testClockStart.Add(time.Minute).Unix())
		if string(header) != `{"alg":"`+m+`","typ":"JWT"}` || string(claims) != wantClaims {
			t.Errorf("%s: header %s claims %s", m, header, claims)
		}
		if info, ok := j.info(tok, nil); !ok || info != (Info{Username: "alice", Revision: 7}) {
			t.Errorf("%s: info %+v %v", m, info, ok)
		}
	}
}

func TestJWTExpiresWithItsTTL(t *testing.T) {
	j, clock := newTestJWT(t, "ES256", "a")
	tok, _ := j.assign("", 0, "alice", 1)
	clock.now = testClockStart.Add(time.Minute - time.Millisecond)
	if _, ok := j.info(tok, nil); !ok {
		t.Error("refused before its exp")
	}
	clock.now = testClockStart.Add(time.Minute)
	if _, ok := j.info(tok, nil); ok {
		t.Error("accepted at its exp")
	}
	// Use does not extend a JWT, unlike a simple token.
	clock.now = testClockStart
	if _, ok := j.info(tok, nil); !ok {
		t.Error("refused before its exp")
	}
}

func TestJWTVerifyOnlyMember(t *testing.T) {
	signer, _ := newTestJWT(t, "RS256", "a")
	kp := keyPair(t, "RS256", "a")
	verifier := newJWTTokens(jwtConfig{alg: "RS256", keys: loadKeys(t, "RS256", kp.Pub, nil), ttl: time.Minute}, signer.now)
	tok, _ := signer.assign("", 0, "alice", 3)
	if info, ok := verifier.info(tok, nil); !ok || info.Username != "alice" {
		t.Errorf("a verify-only member refuses a token of the key's owner: %+v %v", info, ok)
	}
	if _, err := verifier.assign("", 0, "alice", 3); !errors.Is(err, ErrVerifyOnly) || err.Error() != "auth: token signing attempted with verify-only key" {
		t.Errorf("a verify-only member signs: %v", err)
	}
}

// TestJWTRefusesForgeries: tokens not signed with the configured key and
// method, whatever their header says.
func TestJWTRefusesForgeries(t *testing.T) {
	j, _ := newTestJWT(t, "ES256", "a")
	kp := keyPair(t, "ES256", "a")
	good, _ := j.assign("", 0, "alice", 1)
	parts := strings.Split(good, ".")
	other, _ := newTestJWT(t, "ES256", "b")
	rs, _ := newTestJWT(t, "RS256", "a")
	claims := `{"exp":1700000060,"revision":1,"username":"root"}`
	enc := base64.RawURLEncoding.EncodeToString
	rootClaims, _ := j.assign("", 0, "root", 1)
	sig := []byte(parts[2])
	sig[0] ^= 1
	forged := map[string]string{
		"alg none, no signature":          enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc([]byte(claims)) + ".",
		"HS256 keyed with the public key": rawJWT(t, &hmacKeys{hash: crypto.SHA256, secret: kp.Pub}, `{"alg":"HS256","typ":"JWT"}`, claims),
		"header alg HS256, our signature": rawJWT(t, j.keys, `{"alg":"HS256","typ":"JWT"}`, claims),
		"another ES256 key":               mustAssign(t, other, "root"),
		"an RS256 token":                  mustAssign(t, rs, "root"),
		"claims swapped under the sig":    parts[0] + "." + strings.Split(rootClaims, ".")[1] + "." + parts[2],
		"a damaged signature":             parts[0] + "." + parts[1] + "." + string(sig),
		"no signature":                    parts[0] + "." + parts[1] + ".",
	}
	for name, tok := range forged {
		if info, ok := j.info(tok, nil); ok {
			t.Errorf("%s: accepted as %+v", name, info)
		}
	}
}

func mustAssign(t *testing.T, j *jwtTokens, user string) string {
	t.Helper()
	tok, err := j.assign("", 0, user, 1)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestJWTClaimsEtcdAccepts: tokens a key holder could sign, and whether
// etcd 3.7.3 accepts them (observed with its own key): cairn decides the
// same.
func TestJWTClaimsEtcdAccepts(t *testing.T) {
	j, clock := newTestJWT(t, "ES256", "a")
	const h = `{"alg":"ES256","typ":"JWT"}`
	exp := testClockStart.Add(time.Minute).Unix()
	cases := []struct {
		header, claims string
		want           *Info // nil: refused
	}{
		{h, fmt.Sprintf(`{"exp":%d,"revision":4,"username":"root"}`, exp), &Info{"root", 4}},
		{h, `{"revision":4,"username":"root"}`, &Info{"root", 4}}, // no exp: no expiry
		{h, fmt.Sprintf(`{"exp":%d.5,"revision":4.5,"username":"root"}`, exp), &Info{"root", 4}},
		{h, fmt.Sprintf(`{"exp":%d,"revision":4,"username":""}`, exp), &Info{"", 4}},
		{h, fmt.Sprintf(`{"exp":%d,"revision":4,"username":"alice","username":"root"}`, exp), &Info{"root", 4}},
		{h, fmt.Sprintf(`{"exp":%d,"revision":4,"username":"root","iat":"x","extra":[1]}`, exp), &Info{"root", 4}},
		{h, fmt.Sprintf(`{"exp":%d,"revision":4,"username":"root","nbf":%d}`, exp, testClockStart.Unix()), &Info{"root", 4}},
		{`{"alg":"ES256"}`, `{"revision":4,"username":"root"}`, &Info{"root", 4}},
		{`{"alg":"ES256","typ":"XYZ","kid":"k"}`, `{"revision":4,"username":"root"}`, &Info{"root", 4}},
		{h, fmt.Sprintf(`{"exp":"%d","revision":4,"username":"root"}`, exp), nil},
		{h, `{"exp":null,"revision":4,"username":"root"}`, nil},
		{h, fmt.Sprintf(`{"exp":%d,"revision":4,"username":"root"}`, testClockStart.Unix()-1), nil},
		{h, `{"exp":1e30,"revision":4,"username":"root"}`, nil},
		{h, fmt.Sprintf(`{"exp":%d,"revision":"4","username":"root"}`, exp), nil},
		{h, fmt.Sprintf(`{"exp":%d,"revision":true,"username":"root"}`, exp), nil},
		{h, fmt.Sprintf(`{"exp":%d,"username":"root"}`, exp), nil},
		{h, fmt.Sprintf(`{"exp":%d,"revision":4}`, exp), nil},
		{h, fmt.Sprintf(`{"exp":%d,"revision":4,"username":5}`, exp), nil},
		{h, fmt.Sprintf(`{"exp":%d,"revision":4,"username":"root","nbf":%d}`, exp, exp), nil},
		{h, fmt.Sprintf(`{"exp":%d,"revision":4,"username":"root","nbf":"x"}`, exp), nil},
		{h, `[1]`, nil},
		{h, `null`, nil},
		{`{"ALG":"ES256","typ":"JWT"}`, `{"revision":4,"username":"root"}`, nil},
		{`{"alg":"ES384","typ":"JWT"}`, `{"revision":4,"username":"root"}`, nil},
		{`[1]`, `{"revision":4,"username":"root"}`, nil},
	}
	for _, c := range cases {
		clock.now = testClockStart
		info, ok := j.info(rawJWT(t, j.keys, c.header, c.claims), nil)
		switch {
		case c.want == nil && ok:
			t.Errorf("%s %s: accepted as %+v, etcd refuses it", c.header, c.claims, info)
		case c.want != nil && (!ok || info != *c.want):
			t.Errorf("%s %s: %+v %v, etcd accepts it as %+v", c.header, c.claims, info, ok, *c.want)
		}
	}
}

func TestJWTRefusesGarbage(t *testing.T) {
	j, _ := newTestJWT(t, "ES256", "a")
	good := mustAssign(t, j, "alice")
	for _, tok := range []string{
		"", ".", "..", "...", "a.b.c", "abcdefghijklmnop.12", "Bearer " + good, good + "=", good + "==",
		good + ".x", strings.TrimSuffix(good, good[strings.LastIndex(good, "."):]), " " + good,
		"eyJhbGciOiJFUzI1NiJ9.e30.", "e30.e30.e30", "!!!.???.***", strings.Repeat("a", 1<<16),
		"\xff\xfe.\x00.\x01", "eyJhbGciOiJFUzI1NiJ9.eyJ1c2VybmFtZSI6InJvb3QiLCJyZXZpc2lvbiI6MX0",
	} {
		if info, ok := j.info(tok, nil); ok {
			t.Errorf("%.40q: accepted as %+v", tok, info)
		}
	}
}
