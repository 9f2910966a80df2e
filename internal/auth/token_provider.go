package auth

import (
	"fmt"
	"log/slog"
	"time"
)

// TokenProvider issues the tokens Authenticate hands out and tells whom a
// token stands for: etcd's "simple" tokens or JWTs, as --auth-token names.
type TokenProvider interface {
	// assign issues a token of user at auth revision rev. A simple token is
	// "<prefix>.<index>", fixed by the log entry that assigns it; a JWT
	// ignores both.
	assign(prefix string, index uint64, user string, rev uint64) (string, error)
	// info returns who a live token stands for, given the auth state st.
	info(token string, st *state) (Info, bool)
	// signed reports whether a member issues tokens by itself (JWTs),
	// rather than through the log (simple tokens).
	signed() bool
	// invalidateUser and clear end tokens that the provider keeps.
	invalidateUser(user string)
	clear()
}

// NewTokenProvider builds the provider an --auth-token value names:
// "simple" (tokens live simpleTTL without use; 0 means DefaultTokenTTL) or
// "jwt,pub-key=PATH,priv-key=PATH,sign-method=ALG[,ttl=DURATION]". Its
// errors and warnings are etcd's.
func NewTokenProvider(option string, simpleTTL time.Duration, log *slog.Logger) (TokenProvider, error) {
	typ, params, err := parseTokenOption(option)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "simple":
		log.Warn("simple token is not cryptographically signed")
		if simpleTTL <= 0 {
			simpleTTL = DefaultTokenTTL
		}
		return newSimpleTokens(simpleTTL, time.Now), nil
	case "jwt":
		cfg, err := loadJWTConfig(params, log)
		if err != nil {
			return nil, err
		}
		return newJWTTokens(cfg, time.Now), nil
	}
	return nil, fmt.Errorf("%w: unknown token type %q", ErrInvalidAuthOpts, typ)
}
