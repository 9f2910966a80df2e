package auth

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"time"
)

// DefaultJWTTTL is how long a JWT is valid when --auth-token gives no ttl,
// as etcd's.
const DefaultJWTTTL = 5 * time.Minute

// The parameters of a "jwt" --auth-token.
const (
	jwtParamPubKey     = "pub-key"
	jwtParamPrivKey    = "priv-key"
	jwtParamSignMethod = "sign-method"
	jwtParamTTL        = "ttl"
)

// jwtConfig is what a "jwt" --auth-token configures.
type jwtConfig struct {
	alg  string // the JWS "alg" of sign-method
	keys jwtKeys
	ttl  time.Duration
}

// loadJWTConfig checks the parameters of a "jwt" --auth-token and loads
// its keys, failing as etcd does: with ErrInvalidAuthOpts for a bad
// sign-method or ttl or an unreadable file, with ErrMissingKey without
// keys, with the key's problem for a key that does not fit the method. It
// warns of parameters it does not know, as etcd does, and goes on.
func loadJWTConfig(params map[string]string, log *slog.Logger) (jwtConfig, error) {
	var unknown []string
	for _, k := range slices.Sorted(maps.Keys(params)) {
		switch k {
		case jwtParamPubKey, jwtParamPrivKey, jwtParamSignMethod, jwtParamTTL:
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		log.Warn("unknown JWT options", "keys", unknown)
	}
	cfg := jwtConfig{alg: params[jwtParamSignMethod], ttl: DefaultJWTTTL}
	load, ok := signMethods[cfg.alg]
	if !ok {
		return jwtConfig{}, fmt.Errorf("%w: %w %q", ErrInvalidAuthOpts, ErrInvalidAuthMethod, cfg.alg)
	}
	if v, ok := params[jwtParamTTL]; ok {
		ttl, err := time.ParseDuration(v)
		if err != nil {
			return jwtConfig{}, fmt.Errorf("%w: %w", ErrInvalidAuthOpts, err)
		}
		cfg.ttl = ttl
	}
	pub, err := readKeyFile(params[jwtParamPubKey])
	if err != nil {
		return jwtConfig{}, err
	}
	priv, err := readKeyFile(params[jwtParamPrivKey])
	if err != nil {
		return jwtConfig{}, err
	}
	if cfg.keys, err = load(pub, priv); err != nil {
		return jwtConfig{}, err
	}
	return cfg, nil
}

// readKeyFile returns the contents of a key file; no path, no contents.
func readKeyFile(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidAuthOpts, err)
	}
	return b, nil
}
