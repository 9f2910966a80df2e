package cli_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/internal/client/clienttest"
)

func TestCheckPerf(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	endpoints := endpointsFlag(cluster)
	c := clusterClient(t, cluster)

	// A short run of the small workload (the verdict is meant for a
	// minute; --duration is hidden). A loaded test machine may fail the
	// check: the verdict's shape is checked, and the exit code agrees.
	ep := regexp.QuoteMeta(cluster.Endpoints()[0])
	verdict := regexp.MustCompile(`^Compacting with revision (\d+)
Compacted with revision (\d+)
Defragmenting "` + ep + `"
Defragmented "` + ep + `"
(PASS: Throughput is \d+ writes/s|FAIL: Throughput too low: \d+ writes/s)
(PASS: Slowest request took|FAIL: Slowest request took too long:) \d+\.\d{6}s
(PASS: Stddev is|FAIL: Stddev too high:) \d+\.\d{6}s
(PASS|FAIL)
$`)
	out, _, code := runCairnBinary(t, endpoints, "check", "perf", "--duration", "2s", "--auto-compact", "--auto-defrag")
	m := verdict.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("check perf printed:\n%s", out)
	}
	if m[1] != m[2] {
		t.Errorf("compacted at %s after announcing %s", m[2], m[1])
	}
	failed := strings.HasSuffix(out, "FAIL\n")
	if failed != strings.Contains(out, "FAIL:") || (code == 1) != failed || (code == 0) == failed {
		t.Errorf("exit code %d for the verdict:\n%s", code, out)
	}
	if n := countKeys(t, c, "/etcdctl-check-perf/"); n != 0 {
		t.Errorf("%d keys left by check perf", n)
	}
}

func TestCheckDatascale(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	endpoints := endpointsFlag(cluster)
	c := clusterClient(t, cluster)
	out := cairnOutput(t, endpoints, "check", "datascale", "--prefix", "/ds/")
	want := regexp.MustCompile(`^Start data scale check for work load \[10000 key-value pairs, 1024 bytes per key-value, 50 concurrent clients\]\.
PASS: Approximate system memory used : -?\d+\.\d\d MB\.
$`)
	if !want.MatchString(out) {
		t.Errorf("check datascale printed:\n%s", out)
	}
	if n := countKeys(t, c, "/ds/"); n != 0 {
		t.Errorf("%d keys left by check datascale", n)
	}
}

func TestCheckRefusals(t *testing.T) {
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	endpoints := endpointsFlag(cluster)
	cairnOutput(t, endpoints, "put", "/busy/x", "y")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"check", "perf", "--load", "xxl"}, 4, "Error: unknown load option xxl\n"},
		{[]string{"check", "datascale", "--load", "xxl"}, 4, "Error: unknown load option xxl\n"},
		{[]string{"check", "perf", "--prefix", "/busy/"}, 3,
			"Error: prefix \"/busy/\" has keys. Delete with 'cairn del --prefix /busy/' first\n"},
		{[]string{"check", "datascale", "--prefix", "/busy/"}, 3,
			"Error: prefix \"/busy/\" has keys. Delete with cairn del --prefix /busy/ first\n"},
	} {
		stdout, stderr, code := runCairnBinary(t, append([]string{endpoints}, c.args...)...)
		if code != c.code || stdout != "" || stderr != c.msg {
			t.Errorf("cairn %s: exit %d, printed %q and %q on stderr; want %d, %q on stderr", strings.Join(c.args, " "), code, stdout, stderr, c.code, c.msg)
		}
	}
}
