package cli_test

import (
	"strings"
	"testing"

	"github.com/cairnkv/cairn/internal/testnet"
)

// TestGRPCProxyStartRefuses: etcd's checks of the gRPC proxy's flags, with
// its messages, and the flags asking for what cairn's proxy does not do.
func TestGRPCProxyStartRefuses(t *testing.T) {
	addr := testnet.FreeAddr(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen-addr", "bogus"}, "listen tcp: address bogus: missing port in address"},
		{[]string{"--listen-addr", addr, "--endpoints="}, "etcdclient: no available endpoints"},
		{[]string{"--tls-min-version", "TLS1.1"}, `tls-min-version is invalid: unexpected TLS version "TLS1.1" (must be one of: TLS1.2, TLS1.3)`},
		{[]string{"--tls-max-version", "TLS1.0"}, `tls-max-version is invalid: unexpected TLS version "TLS1.0" (must be one of: TLS1.2, TLS1.3)`},
		{[]string{"--tls-min-version", "TLS1.3", "--tls-max-version", "TLS1.2"}, "min version (TLS1.3) is greater than max version (TLS1.2)"},
		{[]string{"--cert-file", "x"}, "KeyFile and CertFile must both be present[key: , cert: x]"},
		{[]string{"--resolver-prefix", "/proxies"}, "invalid resolver-ttl 0"},
		{[]string{"--discovery-srv", "example.com"}, "--discovery-srv: cairn's gRPC proxy does not look up DNS SRV records"},
	} {
		_, stderr, code := runCairnBinary(t, append([]string{"grpc-proxy", "start"}, tc.args...)...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("grpc-proxy start %v: exit %d, %q; want an error with %q", tc.args, code, stderr, tc.want)
		}
	}
}
