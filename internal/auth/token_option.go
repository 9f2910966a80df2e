package auth

import (
	"fmt"
	"strings"
)

// parseTokenOption splits an --auth-token value as etcd does: the token
// type, then comma-separated key=value parameters, each key at most once.
// It checks the syntax only; the type decides which keys mean something.
func parseTokenOption(s string) (typ string, params map[string]string, err error) {
	parts := strings.Split(s, ",")
	params = map[string]string{}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok || strings.Contains(v, "=") {
			return "", nil, fmt.Errorf("%w: invalid token option %q in %q (want key=value)", ErrInvalidAuthOpts, p, s)
		}
		if _, dup := params[k]; dup {
			return "", nil, fmt.Errorf("%w: duplicate parameter %q in %q", ErrInvalidAuthOpts, k, s)
		}
		params[k] = v
	}
	return parts[0], params, nil
}
