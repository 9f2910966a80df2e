package servertls

import (
	"crypto/tls"
	"testing"
)

func TestVersionsAreCheckedInEtcdsWords(t *testing.T) {
	for _, tc := range []struct {
		v    Versions
		want string // "" for valid
	}{
		{Versions{Min: "TLS1.2"}, ""},
		{Versions{Min: "TLS1.2", Max: "TLS1.3", CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}}, ""},
		{Versions{Min: "TLS1.1"}, `unexpected TLS version "TLS1.1" (must be one of: TLS1.2, TLS1.3)`},
		{Versions{Max: "foo"}, `unexpected TLS version "foo" (must be one of: TLS1.2, TLS1.3)`},
		{Versions{Min: "TLS1.3", Max: "TLS1.2"}, "min version (TLS1.3) is greater than max version (TLS1.2)"},
		{Versions{CipherSuites: []string{"FOO"}}, `unexpected TLS cipher suite "FOO"`},
		// etcd's own e2e test names the ChaCha20 suites so
		{Versions{CipherSuites: []string{"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305"}}, ""},
		{Versions{CipherSuites: []string{"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_RSA_WITH_3DES_EDE_CBC_SHA"}}, ""},
		{Versions{CipherSuites: []string{"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA384"}}, `unexpected TLS cipher suite "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA384"`},
		{Versions{Min: "TLS1.3", CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}}, "cipher suites cannot be configured when only TLS1.3 is enabled"},
	} {
		err := tc.v.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%+v: error %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestVersionsSetTheConfig(t *testing.T) {
	cfg, err := Versions{Min: "TLS1.2", Max: "TLS1.3", CipherSuites: []string{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"}}.config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS12 || cfg.MaxVersion != tls.VersionTLS13 ||
		len(cfg.CipherSuites) != 1 || cfg.CipherSuites[0] != tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 {
		t.Fatalf("config: min %x max %x suites %v", cfg.MinVersion, cfg.MaxVersion, cfg.CipherSuites)
	}
}

func TestCipherSuiteAliasesAreTheirSuites(t *testing.T) {
	ids, err := cipherSuiteIDs([]string{"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[0] != tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 || ids[1] != tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 {
		t.Fatalf("ids %x", ids)
	}
}
