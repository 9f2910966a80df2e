package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/client/clienttest"
	"github.com/cairnkv/cairn/internal/testnet"
)

// TestGatewayStart: `cairn gateway start` (etcd's `etcd gateway start`)
// proxies the client's connections to a member, leaves out an endpoint
// that refuses (saying so in etcd's words), and stops on Ctrl-C.
func TestGatewayStart(t *testing.T) {
	cairn := clienttest.CairnBinary(t)
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	dead, gatewayAddr := testnet.FreeAddr(t), testnet.FreeAddr(t)
	var out syncBuffer
	gateway := startCommand(t, cairn, &out, "gateway", "start", "--listen-addr", gatewayAddr,
		"--endpoints", dead+",http://"+cluster.Endpoints()[0]) // a scheme, which the gateway drops, or none
	clienttest.Poll(t, 20*time.Second, "the gateway's ready line", func() bool {
		return strings.Contains(out.String(), `"msg":"ready to proxy client requests"`)
	})
	cairnOutput(t, "--endpoints", gatewayAddr, "put", "through", "gateway")
	if got := cairnOutput(t, "--endpoints", gatewayAddr, "get", "through", "--print-value-only"); got != "gateway\n" {
		t.Errorf("get through the gateway: %q", got)
	}
	if !strings.Contains(out.String(), `"msg":"deactivated endpoint","address":"`+dead+`"`) {
		t.Errorf("the refusing endpoint %s is not said to be left out:\n%s", dead, out.String())
	}
	stop(t, gateway)
}

// TestGatewayStartRefuses: etcd's checks of the gateway's flags, with its
// messages.
func TestGatewayStartRefuses(t *testing.T) {
	addr := testnet.FreeAddr(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--endpoints="}, "no endpoints found"},
		{[]string{"--listen-addr", "bogus"}, "failed to validate listen address: bogus"},
		{[]string{"--listen-addr", addr, "--endpoints", "http://" + addr}, "should not resolve to the gateway listen addr (" + addr + ")"},
	} {
		_, stderr, code := runCairnBinary(t, append([]string{"gateway", "start"}, tc.args...)...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("gateway start %v: exit %d, %q; want an error with %q", tc.args, code, stderr, tc.want)
		}
	}
}
