package api

import (
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/cairnkv/cairn/internal/server"
)

// TestTimeoutErrorsToGRPC: each of a proposal's timeouts reaches the client
// as etcd's gRPC error, which clientv3 turns into its own value.
func TestTimeoutErrorsToGRPC(t *testing.T) {
	for err, want := range map[error]error{
		server.ErrTimeout:                    rpctypes.ErrTimeout,
		server.ErrTimeoutDueToLeaderFail:     rpctypes.ErrTimeoutDueToLeaderFail,
		server.ErrTimeoutDueToConnectionLost: rpctypes.ErrTimeoutDueToConnectionLost,
	} {
		if got := rpctypes.Error(toGRPC(err)); got != want {
			t.Errorf("%v reaches the client as %v, want %v", err, got, want)
		}
		if err.Error() != want.Error() {
			t.Errorf("%q is not etcd's %q", err, want)
		}
	}
}
