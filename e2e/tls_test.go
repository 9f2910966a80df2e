package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/testnet"
	"github.com/cairnkv/cairn/internal/tlstest"
)

// runCommand runs a command with a deadline and returns its output and exit code.
func runCommand(t *testing.T, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out.String(), errOut.String(), code
}

// TestTLSCluster runs three members with https client and peer URLs and
// certificates required on both, and reaches them with the official
// client, the cairn command and the real etcdctl.
func TestTLSCluster(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	ms := newCluster(t, 3, clusterOptions{certs: &certs})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := client(t, ms[0]).Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if g, err := client(t, ms[2]).Get(ctx, "k"); err != nil || len(g.Kvs) != 1 || string(g.Kvs[0].Value) != "v" {
		t.Fatalf("get on another member: %v %v", g, err)
	}

	endpoints := "--endpoints=" + ms[0].curl + "," + ms[1].curl
	tlsFlags := []string{"--cacert", certs.CAFile, "--cert", certs.ClientCert, "--key", certs.ClientKey}
	if out, errOut, code := runCommand(t, cairnBin, append([]string{endpoints, "get", "k", "--print-value-only"}, tlsFlags...)...); code != 0 || out != "v\n" {
		t.Errorf("cairn get: exit %d, %q %q", code, out, errOut)
	}
	if out, errOut, code := runCommand(t, cairnBin, endpoints, "--cacert", certs.CAFile, "--command-timeout=1s", "get", "k"); code == 0 {
		t.Errorf("cairn get without a client certificate succeeded: %q %q", out, errOut)
	}
	if _, _, code := runCommand(t, cairnBin, append([]string{endpoints, "endpoint", "health"}, tlsFlags...)...); code != 0 {
		t.Errorf("cairn endpoint health: exit %d", code)
	}

	t.Run("etcdctl", func(t *testing.T) {
		etcdctl := etcdref.Bin(t, "etcdctl")
		args := append([]string{endpoints, "--command-timeout=2s", "put", "from-etcdctl", "x"}, tlsFlags...)
		if out, errOut, code := runCommand(t, etcdctl, args...); code != 0 || out != "OK\n" {
			t.Fatalf("etcdctl put: exit %d, %q %q", code, out, errOut)
		}
		args = append([]string{"--endpoints=" + ms[2].curl, "get", "from-etcdctl", "--print-value-only"}, tlsFlags...)
		if out, errOut, code := runCommand(t, etcdctl, args...); code != 0 || out != "x\n" {
			t.Fatalf("etcdctl get: exit %d, %q %q", code, out, errOut)
		}
	})
}

// TestAutoTLSCluster runs three members with self-signed certificates
// (--auto-tls, --peer-auto-tls): peers do not verify each other's.
func TestAutoTLSCluster(t *testing.T) {
	ms := newCluster(t, 3, clusterOptions{autoTLS: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := client(t, ms...).Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if g, err := client(t, ms[1]).Get(ctx, "k"); err != nil || len(g.Kvs) != 1 {
		t.Fatalf("get: %v %v", g, err)
	}
}

// TestBadTLSSetUpFailsAtStart: an https URL without a certificate, or a
// certificate that cannot be used, ends `cairn serve` at once with one error
// line.
func TestBadTLSSetUpFailsAtStart(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	clientURL, peerURL := "https://"+testnet.FreeAddr(t), "https://"+testnet.FreeAddr(t)
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--listen-client-urls", clientURL},
			"Error: TLS key/cert (--cert-file, --key-file) must be provided for client url " + clientURL + " with HTTPS scheme\n"},
		{[]string{"--listen-peer-urls", peerURL},
			"Error: TLS key/cert (--peer-cert-file, --peer-key-file) must be provided for peer url " + peerURL + " with HTTPS scheme\n"},
		{[]string{"--listen-client-urls", clientURL, "--cert-file", certs.ServerCert, "--key-file", certs.ClientKey},
			"Error: load --cert-file " + certs.ServerCert + " and --key-file " + certs.ClientKey + ": tls: private key does not match public key\n"},
		{[]string{"--listen-client-urls", clientURL, "--cert-file", certs.ServerCert + ".missing", "--key-file", certs.ServerKey},
			"Error: load --cert-file " + certs.ServerCert + ".missing and --key-file " + certs.ServerKey + ": open " + certs.ServerCert + ".missing: no such file or directory\n"},
	} {
		args := append([]string{"serve", "--data-dir", t.TempDir()}, tc.flags...)
		// Log lines of the start (warnings) may come first; the error is the
		// one line at the end.
		out, errOut, code := runCommand(t, cairnBin, args...)
		if code != 1 || !strings.HasSuffix(errOut, "\n"+tc.want) && errOut != tc.want || strings.Count(errOut, "Error:") != 1 {
			t.Errorf("cairn %s: exit %d, stdout %q, stderr %q; want exit 1, stderr ending %q", strings.Join(args, " "), code, out, errOut, tc.want)
		}
	}
}
