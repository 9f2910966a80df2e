package api

import (
	"slices"
	"testing"

	"github.com/cairnkv/cairn/internal/auth/jwtkeytest"
	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/testnet"
)

// TestAuthMatchesEtcdWithJWT runs the auth transcript against real etcd
// 3.7.3 and against cairn, both with --auth-token jwt and the same keys:
// a JWT keeps the auth revision it was issued at, so every change of the
// auth state in the script makes the tokens old, which both must answer
// alike.
func TestAuthMatchesEtcdWithJWT(t *testing.T) {
	for _, method := range []string{"RS256", "ES256"} {
		t.Run(method, func(t *testing.T) {
			option := jwtkeytest.New(t, method).Option(t, t.TempDir(), method)
			want := newTranscript(t, etcdref.Start(t, testnet.FreeURL(t), testnet.FreeURL(t), "--auth-token", option)).runAuthScript()
			curl, _, _ := startMember(t, memberconfig.Config{AuthToken: option})
			got := newTranscript(t, curl).runAuthScript()
			if !slices.Equal(want, got) {
				t.Errorf("cairn's auth transcript with %s tokens differs from etcd's:\n%s", method, diffLines(want, got))
			}
			t.Logf("%d lines the same", len(want))
		})
	}
}
