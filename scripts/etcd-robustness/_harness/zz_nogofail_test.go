// Harness addition (cairn robustness measurement), copied into
// tests/robustness/ of the v3.7.3 tests module by prepare.sh.
//
// TestRobustnessExploratory turns gofail on for every scenario
// (e2e.WithGoFailEnabled(true)), so with a binary that is not gofail-built
// the framework skips all of them at cluster start. This test takes the same
// scenario list (scenarios.Exploratory: 4 traffic profiles x cluster of 1 and
// of 3 with peer TLS + peer proxy, randomized snapshot count / tick /
// compaction batch limit / snapshot catch-up entries), turns gofail off, and
// instead of failpoint.PickRandom runs each failpoint that needs no gofail
// build and passes failpoint.Validate for that cluster, one subtest each,
// through the suite's own testRobustness (traffic, injection, validation).
package robustness

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"go.etcd.io/etcd/tests/v3/framework/e2e"
	"go.etcd.io/etcd/tests/v3/robustness/failpoint"
	"go.etcd.io/etcd/tests/v3/robustness/scenarios"
)

// The failpoints that need neither a gofail build, lazyfs nor an older
// release binary. Named here because BlackholePeerNetwork and
// BlackholeUntilSnapshot share Name() "blackholePeerNetwork".
// ROBUSTNESS_NOGOFAIL_FAILPOINTS: comma-separated names to run (default all).
var noGofailFailpoints = []struct {
	name string
	fp   failpoint.Failpoint
}{
	{"Kill", failpoint.KillFailpoint},
	{"blackholePeerNetwork", failpoint.BlackholePeerNetwork},
	{"delayPeerNetwork", failpoint.DelayPeerNetwork},
	{"dropPeerNetwork", failpoint.DropPeerNetwork},
	{"MemberReplace", failpoint.MemberReplace},
	{"blackholeUntilSnapshot", failpoint.BlackholeUntilSnapshot},
}

func TestRobustnessNoGofail(t *testing.T) {
	testRunner.BeforeTest(t)
	only := map[string]bool{}
	if v := os.Getenv("ROBUSTNESS_NOGOFAIL_FAILPOINTS"); v != "" {
		for _, n := range strings.Split(v, ",") {
			only[strings.TrimSpace(n)] = true
		}
	}
	for _, base := range scenarios.Exploratory(t) {
		for _, nf := range noGofailFailpoints {
			if len(only) > 0 && !only[nf.name] {
				continue
			}
			fp := nf.fp
			s := base
			s.Cluster.GoFailEnabled = false
			s.Failpoint = fp
			t.Run(s.Name+"/"+nf.name, func(t *testing.T) {
				// every failpoint of the list but Kill has Available() false
				// for a cluster of one; skip those without starting a cluster.
				if s.Cluster.ClusterSize <= 1 && nf.name != "Kill" {
					t.Skipf("not available for a cluster of %d (needs ClusterSize > 1)", s.Cluster.ClusterSize)
				}
				lg := zaptest.NewLogger(t)
				s.Cluster.Logger = lg
				ctx := t.Context()
				c, err := e2e.NewEtcdProcessCluster(ctx, t, e2e.WithConfig(&s.Cluster))
				require.NoError(t, err)
				defer forcestopCluster(c)
				if err := failpoint.Validate(c, s.Failpoint, s.Profile); err != nil {
					t.Skipf("not available for this cluster: %v", err)
				}
				testRobustness(ctx, t, lg, s, c)
			})
		}
	}
}
