package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/auth/jwtkeytest"
	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/testnet"
)

// refusedStart runs a server that must refuse to start and returns its
// output; it fails the test if the server is still running after 20s.
func refusedStart(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("%s %v started (%v); output:\n%s", filepath.Base(bin), args, err, out)
	}
	return string(out)
}

// etcdFatal is the error of etcd's fatal log line.
func etcdFatal(t *testing.T, out string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct{ Level, Error string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Level == "fatal" {
			return line.Error
		}
	}
	t.Fatalf("no fatal line in etcd's output:\n%s", out)
	return ""
}

// TestServeRefusesBadAuthTokenAsEtcd: for each --auth-token etcd 3.7.3
// refuses to start with, cairn serve refuses too, and says what etcd says
// (with more detail after it) in one line.
func TestServeRefusesBadAuthTokenAsEtcd(t *testing.T) {
	etcd := etcdref.Bin(t, "etcd")
	dir := t.TempDir()
	jwtkeytest.New(t, "RS256").Write(t, dir, "rsa")
	jwtkeytest.New(t, "ES256").Write(t, dir, "ec")
	if err := os.WriteFile(filepath.Join(dir, "garbage"), []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyPath := regexp.MustCompile(`(pub-key|priv-key)=([^,]+)`)
	for _, option := range []string{
		"bogus",
		"jwt",
		"jwt,pub-key=rsa.pub",
		"jwt,sign-method=XX256,pub-key=rsa.pub",
		"jwt,sign-method=RS256",
		"jwt,sign-method=HS256,pub-key=rsa.pub",
		"jwt,sign-method=RS256,pub-key=missing",
		"jwt,sign-method=RS256,pub-key=rsa.pub,ttl=abc",
		"jwt,sign-method=RS256,pub-key=rsa.pub,ttl",
		"jwt,sign-method=RS256,pub-key=rsa.pub,",
		"jwt,sign-method=RS256,pub-key=rsa.pub,pub-key=ec.pub",
		"jwt,sign-method=RS256,pub-key=ec.pub",
		"jwt,sign-method=ES256,pub-key=rsa.pub",
		"jwt,sign-method=EdDSA,pub-key=rsa.pub",
		"jwt,sign-method=ES256,priv-key=rsa.key",
		"jwt,sign-method=RS256,pub-key=garbage",
	} {
		option := keyPath.ReplaceAllString(option, "${1}="+dir+"/${2}")
		curl, purl := testnet.FreeURL(t), testnet.FreeURL(t)
		want := etcdFatal(t, refusedStart(t, etcd, "--data-dir", filepath.Join(t.TempDir(), "etcd"),
			"--listen-client-urls", curl, "--advertise-client-urls", curl, "--listen-peer-urls", purl,
			"--initial-advertise-peer-urls", purl, "--initial-cluster", "default="+purl, "--auth-token", option))
		got := refusedStart(t, cairnBin, "serve", "--data-dir", filepath.Join(t.TempDir(), "cairn"),
			"--listen-client-urls", curl, "--listen-peer-urls", purl, "--auth-token", option)
		if !strings.Contains(got, want) || strings.Contains(strings.TrimSpace(got), "\n") {
			t.Errorf("--auth-token %s: etcd says %q, cairn (one line wanted):\n%s", option, want, got)
		}
	}
}
