package auth

import (
	"encoding/base64"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/auth/jwtkeytest"
)

// signMethodNames are every sign method etcd accepts, sorted.
func signMethodNames() []string { return slices.Sorted(maps.Keys(signMethods)) }

// keyPairs caches one key pair per sign method and name: RSA keys are slow
// to make.
var keyPairs sync.Map

func keyPair(t testing.TB, method, name string) jwtkeytest.KeyPair {
	t.Helper()
	k := method + "/" + name
	if kp, ok := keyPairs.Load(k); ok {
		return kp.(jwtkeytest.KeyPair)
	}
	kp, _ := keyPairs.LoadOrStore(k, jwtkeytest.New(t, method))
	return kp.(jwtkeytest.KeyPair)
}

// loadKeys loads the keys of a method from PEM (or secret) bytes.
func loadKeys(t testing.TB, method string, pub, priv []byte) jwtKeys {
	t.Helper()
	keys, err := signMethods[method](pub, priv)
	if err != nil {
		t.Fatalf("%s keys: %v", method, err)
	}
	return keys
}

// testClockStart is where the fake clocks of the JWT tests start.
var testClockStart = time.Unix(1_700_000_000, 0)

// newTestJWT is a JWT provider of method with the named key pair, tokens
// valid for a minute, on a fake clock.
func newTestJWT(t testing.TB, method, name string) (*jwtTokens, *fakeClock) {
	t.Helper()
	kp := keyPair(t, method, name)
	clock := &fakeClock{now: testClockStart}
	return newJWTTokens(jwtConfig{alg: method, keys: loadKeys(t, method, kp.Pub, kp.Priv), ttl: time.Minute}, clock.Now), clock
}

// rawJWT signs any header and claims JSON with keys: tokens etcd would
// never issue but a holder of the key could.
func rawJWT(t testing.TB, keys jwtKeys, header, claims string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	input := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(claims))
	sig, err := keys.sign([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc.EncodeToString(sig)
}
