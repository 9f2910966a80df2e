package auth

import "time"

// jwtTokens is etcd's "jwt" token provider: a token is a JWS, signed by
// the member that authenticates the user, that names the user and the
// auth revision it was issued at; any member with the public key checks it
// without shared state. As etcd, it does not check that the user still
// exists: a changed auth state makes the token's revision old instead,
// which key permission checks refuse.
type jwtTokens struct {
	jwtConfig
	now func() time.Time
}

func newJWTTokens(cfg jwtConfig, now func() time.Time) *jwtTokens {
	return &jwtTokens{jwtConfig: cfg, now: now}
}

// assign signs a token of user at auth revision rev, valid for the
// configured ttl.
func (j *jwtTokens) assign(_ string, _ uint64, user string, rev uint64) (string, error) {
	claims := jwtClaims{Exp: j.now().Add(j.ttl).Unix(), Revision: rev, Username: user}
	return encodeJWT(j.alg, claims, j.keys.sign)
}

// info checks a token: well formed, of the configured algorithm (never the
// one its header would pick), signed with the configured key, not expired.
func (j *jwtTokens) info(token string, _ *state) (Info, bool) {
	p, err := parseJWT(token)
	if err != nil || p.alg != j.alg || !j.keys.verify(p.input, p.sig) || !p.liveAt(j.now()) {
		return Info{}, false
	}
	return p.identity()
}

// signed is true: a member signs JWTs by itself.
func (j *jwtTokens) signed() bool { return true }

// invalidateUser and clear do nothing: a JWT lives until it expires, and
// a changed auth state makes its revision old.
func (j *jwtTokens) invalidateUser(string) {}
func (j *jwtTokens) clear()                {}
