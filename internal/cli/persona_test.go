package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestStartedAsEtcd: under the name etcd the binary answers --version in
// etcd's format (tools read the server's version from its first line) and
// takes the server's flags without `serve`; under other names it is cairn.
func TestStartedAsEtcd(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := ExecuteAs("/usr/local/bin/etcd", []string{"--version"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("etcd --version: exit %d: %s", code, errOut.String())
	}
	if first, _, _ := strings.Cut(out.String(), "\n"); first != "etcd Version: 3.7.3" {
		t.Errorf("etcd --version starts with %q", first)
	}
	out.Reset()
	if code := ExecuteAs("etcd", []string{"--help"}, nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), "--initial-cluster") {
		t.Errorf("etcd --help: exit %d, no server flags in:\n%s", code, out.String())
	}
	out.Reset()
	if code := ExecuteAs("etcd", []string{"gateway", "start", "--help"}, nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), "--retry-delay") {
		t.Errorf("etcd gateway start --help: exit %d: %s", code, out.String())
	}
	out.Reset()
	if code := ExecuteAs("etcd", []string{"grpc-proxy", "start", "--help"}, nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), "--endpoints-auto-sync-interval") {
		t.Errorf("etcd grpc-proxy start --help: exit %d: %s", code, out.String())
	}
	errOut.Reset()
	if code := ExecuteAs("etcd", []string{"grpc-proxy", "start", "--tls-min-version", "TLS1.1"}, nil, &out, &errOut); code == 0 ||
		!strings.Contains(errOut.String(), `tls-min-version is invalid: unexpected TLS version "TLS1.1" (must be one of: TLS1.2, TLS1.3)`) {
		t.Errorf("etcd grpc-proxy start --tls-min-version TLS1.1: exit %d: %s", code, errOut.String())
	}
	out.Reset()
	if code := ExecuteAs("etcdctl", []string{"--version"}, nil, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "cairn Version: ") {
		t.Errorf("etcdctl --version: exit %d: %q", code, out.String())
	}
}
