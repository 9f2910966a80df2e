package auth

import (
	"bytes"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParseTokenOption(t *testing.T) {
	typ, params, err := parseTokenOption("jwt,a=b,c=,d=/x/y")
	if err != nil || typ != "jwt" || !maps.Equal(params, map[string]string{"a": "b", "c": "", "d": "/x/y"}) {
		t.Errorf("parse: %q %v %v", typ, params, err)
	}
	if typ, params, err := parseTokenOption("simple"); err != nil || typ != "simple" || len(params) != 0 {
		t.Errorf("parse simple: %q %v %v", typ, params, err)
	}
	// etcd refuses these before it looks at the type.
	for _, s := range []string{"jwt,ttl", "jwt,ttl=5m=3", "jwt,a=1,", "simple,a=1,a=2", "bogus,x"} {
		if _, _, err := parseTokenOption(s); !errors.Is(err, ErrInvalidAuthOpts) {
			t.Errorf("%q: %v, want %v", s, err, ErrInvalidAuthOpts)
		}
	}
}

// keyFiles writes the key files the option tests name.
func keyFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	keyPair(t, "RS256", "a").Write(t, dir, "rsa")
	keyPair(t, "ES256", "a").Write(t, dir, "ec")
	keyPair(t, "ES256", "b").Write(t, dir, "ec-b")
	keyPair(t, "EdDSA", "a").Write(t, dir, "ed")
	for name, b := range map[string]string{"empty": "", "garbage": "not a key\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// keyPath is a key file parameter that names a file.
var keyPath = regexp.MustCompile(`(pub-key|priv-key)=([^,]+)`)

// TestNewTokenProviderRefusesAsEtcd: every option etcd 3.7.3 refuses, with
// the error etcd ends with (the key checks' texts are etcd's too).
func TestNewTokenProviderRefusesAsEtcd(t *testing.T) {
	dir := keyFiles(t)
	cases := []struct {
		option string
		want   error
		text   string
	}{
		{"bogus", ErrInvalidAuthOpts, `unknown token type "bogus"`},
		{"JWT,sign-method=RS256,pub-key=rsa.pub", ErrInvalidAuthOpts, `unknown token type "JWT"`},
		{"jwt", ErrInvalidAuthMethod, ""},
		{"jwt,pub-key=rsa.pub", ErrInvalidAuthMethod, ""},
		{"jwt,sign-method=rs256,pub-key=rsa.pub", ErrInvalidAuthMethod, ""},
		{"jwt,sign-method=none,pub-key=rsa.pub", ErrInvalidAuthMethod, ""},
		{"jwt,sign-method=RS256,pub-key=rsa.pub,ttl=abc", ErrInvalidAuthOpts, `invalid duration "abc"`},
		{"jwt,sign-method=RS256,pub-key=missing", ErrInvalidAuthOpts, "no such file"},
		{"jwt,sign-method=RS256", ErrMissingKey, ""},
		{"jwt,sign-method=RS256,pub-key=", ErrMissingKey, ""},
		{"jwt,sign-method=RS256,pub-key=empty", ErrMissingKey, ""},
		{"jwt,sign-method=HS256,pub-key=rsa.pub", ErrMissingKey, ""},
		{"jwt, pub-key=rsa.pub,sign-method=RS256", ErrMissingKey, ""},
		{"jwt,sign-method=RS256,pub-key=garbage", ErrKeyMustBePEM, ""},
		{"jwt,sign-method=RS256,pub-key=ec.pub", nil, "key is not a valid RSA public key"},
		{"jwt,sign-method=ES256,pub-key=rsa.pub", nil, "key is not a valid ECDSA public key"},
		{"jwt,sign-method=EdDSA,pub-key=rsa.pub", nil, "key is not a valid Ed25519 public key"},
		{"jwt,sign-method=ES256,priv-key=rsa.key", nil, "key is not a valid ECDSA private key"},
		{"jwt,sign-method=ES256,pub-key=ec-b.pub,priv-key=ec.key", ErrKeyMismatch, ""},
	}
	for _, c := range cases {
		option := keyPath.ReplaceAllString(c.option, "${1}="+dir+"/${2}")
		_, err := NewTokenProvider(option, 0, slog.New(slog.DiscardHandler))
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %v %s", c.option, err, c.want, c.text)
		}
	}
}

// TestNewTokenProviderWarnsAsEtcd: what etcd warns of and starts anyway.
func TestNewTokenProviderWarnsAsEtcd(t *testing.T) {
	dir := keyFiles(t)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	p, err := NewTokenProvider("simple,whatever=1", 0, log)
	if err != nil || p.signed() || !strings.Contains(logs.String(), `msg="simple token is not cryptographically signed"`) {
		t.Errorf("simple with an option: %v, log %s", err, logs.String())
	}
	logs.Reset()
	p, err = NewTokenProvider("jwt,sign-method=ES256,priv-key="+dir+"/ec.key,foo=1,bar=2", 0, log)
	if err != nil || !p.signed() || !strings.Contains(logs.String(), `msg="unknown JWT options" keys="[bar foo]"`) {
		t.Fatalf("jwt with unknown options: %v, log %s", err, logs.String())
	}
	if ttl := p.(*jwtTokens).ttl; ttl != DefaultJWTTTL {
		t.Errorf("default ttl %v, want %v", ttl, DefaultJWTTTL)
	}
	p, err = NewTokenProvider("jwt,sign-method=ES256,pub-key="+dir+"/ec.pub,ttl=90s", 0, log)
	if err != nil || p.(*jwtTokens).ttl != 90*time.Second {
		t.Fatalf("ttl=90s: %v", err)
	}
	// A verify-only member starts; it refuses to sign.
	if _, err := p.assign("", 0, "alice", 1); !errors.Is(err, ErrVerifyOnly) {
		t.Errorf("verify-only sign: %v", err)
	}
}
