package cli_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/client/clienttest"
)

// TestEndpointStatusClusterNamesSilentMembers: with a member stopped,
// endpoint status --cluster prints etcdctl's line for its endpoint, then
// which member it is and, from a cairn member that answered, since when
// that member has not heard from it; etcd's members do not say since when.
func TestEndpointStatusClusterNamesSilentMembers(t *testing.T) {
	for _, server := range clienttest.Servers(t) {
		t.Run(server.Name, func(t *testing.T) {
			cluster := clienttest.StartCluster(t, clienttest.Options{Size: 3, Server: server.Command})
			stopped := cluster.Members[2]
			id := fmt.Sprintf("%x", cluster.MemberID(stopped))
			before := time.Now().Add(-time.Second) // the metric has millisecond precision
			stopped.Kill()
			stdout, stderr, code := runCairnBinary(t, "--endpoints", cluster.Members[0].Endpoint(), "--command-timeout=1s",
				"endpoint", "status", "--cluster")
			if code == 0 || strings.Count(stdout, "\n") != 2 || strings.Contains(stdout, stopped.ClientURL) {
				t.Errorf("exit %d, stdout:\n%s", code, stdout)
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if len(lines) != 3 || lines[0] != fmt.Sprintf("Failed to get the status of endpoint %s (context deadline exceeded)", stopped.ClientURL) ||
				lines[1] != "Did not answer (1 of 3 endpoints):" {
				t.Fatalf("stderr:\n%s", stderr)
			}
			silent := fmt.Sprintf("  m3 (%s) at %s", id, stopped.ClientURL)
			if server.Name == "etcd" {
				if lines[2] != silent {
					t.Errorf("got %q, want %q", lines[2], silent)
				}
				return
			}
			m := regexp.MustCompile(`^` + regexp.QuoteMeta(silent) + `: m[12] \([0-9a-f]+\) has had no message stream from it since (\S+) \(\d+s ago\)$`).FindStringSubmatch(lines[2])
			if m == nil {
				t.Fatalf("got %q, want %q and since when", lines[2], silent)
			}
			if since, err := time.Parse(time.RFC3339, m[1]); err != nil || since.Before(before.Truncate(time.Second)) || since.After(time.Now()) {
				t.Errorf("since %s (%v), want after %s", m[1], err, before.UTC().Format(time.RFC3339))
			}
		})
	}
}
