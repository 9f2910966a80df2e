package cli_test

import (
	"strings"
	"testing"

	"github.com/cairnkv/cairn/internal/client/clienttest"
)

// TestForensicsWALRepairRefusedWhileMemberRuns: wal repair refuses a data
// dir that a running member (etcd or cairn serve) holds, saying so, and
// runs once the member is stopped.
func TestForensicsWALRepairRefusedWhileMemberRuns(t *testing.T) {
	for _, server := range clienttest.Servers(t) {
		t.Run(server.Name, func(t *testing.T) {
			cluster := clienttest.StartCluster(t, clienttest.Options{Server: server.Command})
			m := cluster.Members[0]
			stdout, stderr, code := runCairnBinary(t, "wal", "repair", m.DataDir)
			if code == 0 || stdout != "" || !strings.Contains(stderr, "not repaired, nothing changed") ||
				!strings.Contains(stderr, "a member (cairn serve or etcd) is running on this data dir; stop it first") {
				t.Errorf("wal repair of a running member's dir: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
			}
			m.Kill()
			if out := cairnOutput(t, "wal", "repair", m.DataDir); !strings.Contains(out, "nothing to repair") {
				t.Errorf("wal repair once the member is stopped: %q", out)
			}
		})
	}
}
