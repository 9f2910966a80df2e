package cli_test

import (
	"strings"
	"testing"

	"github.com/cairnkv/cairn/internal/cli"
	"github.com/cairnkv/cairn/internal/client/clienttest"
	"github.com/cairnkv/cairn/internal/tlstest"
)

// execute runs cairn in-process and returns its output and exit code.
func execute(args ...string) (stdout, stderr string, code int) {
	var out, errOut strings.Builder
	code = cli.Execute(args, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestTLSFlags(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	cluster := clienttest.StartCluster(t, clienttest.Options{ClientTLS: &certs})
	endpoint := "--endpoints=" + cluster.Members[0].ClientURL
	withCert := []string{"--cert", certs.ClientCert, "--key", certs.ClientKey}

	tests := []struct {
		name string
		args []string
		want string // stdout, or the start of stderr when the command fails
		code int
	}{
		{"CA and client certificate", append([]string{endpoint, "--cacert", certs.CAFile, "put", "k", "v"}, withCert...), "OK\n", 0},
		{"server not verified", append([]string{endpoint, "--insecure-skip-tls-verify", "get", "k", "--print-value-only"}, withCert...), "v\n", 0},
		{"environment", []string{endpoint, "get", "k", "--print-value-only"}, "v\n", 0},
		{"unknown CA", append([]string{endpoint, "--command-timeout=500ms", "get", "k"}, withCert...), "Error: context deadline exceeded", 1},
		{"missing key", []string{endpoint, "--cert", certs.ClientCert, "get", "k"}, "Error: a client certificate needs both", 128},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "environment" {
				t.Setenv("ETCDCTL_CACERT", certs.CAFile)
				t.Setenv("CAIRN_CERT", certs.ClientCert)
				t.Setenv("ETCDCTL_KEY", certs.ClientKey)
			}
			stdout, stderr, code := execute(tt.args...)
			got := stdout
			if code != 0 {
				got = stderr
			}
			if code != tt.code || !strings.HasPrefix(got, tt.want) {
				t.Fatalf("cairn %s: exit %d, output %q; want exit %d, output %q", strings.Join(tt.args, " "), code, got, tt.code, tt.want)
			}
		})
	}
}
