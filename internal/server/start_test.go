package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnkv/cairn/internal/memberconfig"
)

// TestStartRefusesBadAuthToken: a bad --auth-token stops Start before it
// touches the data dir; an empty one means etcd's default, simple tokens.
func TestStartRefusesBadAuthToken(t *testing.T) {
	if c := (memberconfig.Config{}).WithDefaults(); c.AuthToken != "simple" {
		t.Errorf("default --auth-token %q, want simple", c.AuthToken)
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	_, err := Start(memberconfig.Config{DataDir: dataDir, AuthToken: "jwt,sign-method=RS256"})
	if err == nil || err.Error() != "--auth-token: auth: missing key data" {
		t.Errorf("Start with a JWT and no key: %v", err)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("the data dir was created: %v", err)
	}
}
