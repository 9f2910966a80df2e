package servertls

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
)

// Versions are the flags both sides share: --tls-min-version,
// --tls-max-version and --cipher-suites.
type Versions struct {
	Min, Max     string // "TLS1.2" or "TLS1.3"; "" leaves Go's default
	CipherSuites []string
}

// DefaultMinVersion is etcd's --tls-min-version.
const DefaultMinVersion = "TLS1.2"

var versionNames = map[string]uint16{"TLS1.2": tls.VersionTLS12, "TLS1.3": tls.VersionTLS13}

func parseVersion(s string) (uint16, error) {
	if s == "" {
		return 0, nil
	}
	v, ok := versionNames[s]
	if !ok {
		return 0, fmt.Errorf("unexpected TLS version %q (must be one of: TLS1.2, TLS1.3)", s)
	}
	return v, nil
}

// Validate reports the first problem with the flags, in etcd's words.
func (v Versions) Validate() error {
	_, err := v.config()
	return err
}

// config is a TLS configuration with the versions and cipher suites set.
func (v Versions) config() (*tls.Config, error) {
	lo, err := parseVersion(v.Min)
	if err != nil {
		return nil, err
	}
	hi, err := parseVersion(v.Max)
	if err != nil {
		return nil, err
	}
	if hi != 0 && lo > hi {
		return nil, fmt.Errorf("min version (%s) is greater than max version (%s)", v.Min, v.Max)
	}
	suites, err := cipherSuiteIDs(v.CipherSuites)
	if err != nil {
		return nil, err
	}
	if len(suites) > 0 && lo == tls.VersionTLS13 {
		return nil, fmt.Errorf("cipher suites cannot be configured when only TLS1.3 is enabled")
	}
	return &tls.Config{MinVersion: lo, MaxVersion: hi, CipherSuites: suites}, nil
}

// cipherSuiteAliases are the names etcd accepts besides those of crypto/tls:
// the spellings of the ChaCha20-Poly1305 suites from before Go 1.16.
var cipherSuiteAliases = map[string]uint16{
	"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305":   tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
}

// cipherSuiteIDs looks up cipher suites by their names in crypto/tls
// (TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, ...) or cipherSuiteAliases,
// the names etcd accepts.
func cipherSuiteIDs(names []string) ([]uint16, error) {
	known := append(tls.CipherSuites(), tls.InsecureCipherSuites()...)
	var ids []uint16
	for _, name := range names {
		name = strings.TrimSpace(name)
		if id, ok := cipherSuiteAliases[name]; ok {
			ids = append(ids, id)
			continue
		}
		i := slices.IndexFunc(known, func(s *tls.CipherSuite) bool { return s.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("unexpected TLS cipher suite %q", name)
		}
		ids = append(ids, known[i].ID)
	}
	return ids, nil
}
