package cli_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cairnkv/cairn/internal/client/clienttest"
	"github.com/cairnkv/cairn/internal/etcdref"
)

// compatScript is run once with etcdctl and once with cairn, each time on a
// fresh server; every step must print the same thing, in every format it
// lists, and exit with the same code. The server is etcd 3.7.3, or the one
// that CAIRN_TEST_SERVER names (for example "cairn serve").
var compatScript = []step{
	// put, get, del
	{args: []string{"put", "foo", "bar"}, formats: allFormats},
	{args: []string{"put", "foo", "bar2", "--prev-kv"}, formats: allFormats},
	{args: []string{"put", "from-stdin"}, stdin: "line one\nline two\n"},
	{args: []string{"put", "empty-stdin"}},
	{args: []string{"put", "foo", "--ignore-value", "--prev-kv"}, formats: []string{"simple", "fields"}},
	{args: []string{"put", "odd key", "odd\nvalue\x01"}},
	{args: []string{"put", "--", "-dash", "-value"}},
	{args: []string{"put", "foo", "x", "--lease", "zz"}},
	{args: []string{"put"}},
	{args: []string{"get", "foo"}, formats: allFormats},
	{args: []string{"get", "", "--prefix"}, formats: allFormats},
	{args: []string{"get", "", "--from-key", "--keys-only"}, formats: allFormats},
	{args: []string{"get", "f", "--prefix", "--print-value-only"}, formats: []string{"simple", "json"}},
	{args: []string{"get", "f", "--prefix", "--count-only"}, formats: []string{"simple", "fields"}},
	{args: []string{"get", "", "--prefix", "--limit", "2", "--sort-by", "MODIFY", "--order", "DESCEND"}, formats: allFormats},
	{args: []string{"get", "foo", "--rev", "2"}, formats: allFormats},
	{args: []string{"get", "a", "z", "--consistency", "s", "--min-mod-rev", "3"}, formats: []string{"simple", "fields"}},
	{args: []string{"get", "", "--prefix", "--hex"}, formats: []string{"simple", "json", "fields"}},
	{args: []string{"get", "foo", "--stream"}, formats: []string{"simple", "json"}},
	{args: []string{"get"}},
	{args: []string{"get", "a", "b", "--prefix"}},
	{args: []string{"get", "a", "--prefix", "--from-key"}},
	{args: []string{"get", "a", "--keys-only", "--count-only"}, formats: []string{"fields"}},
	{args: []string{"get", "a", "--sort-by", "SIZE"}},
	{args: []string{"get", "a", "--consistency", "x"}},
	{args: []string{"get", "foo", "--rev", "1000"}},
	{args: []string{"del", "odd key"}, formats: allFormats},
	{args: []string{"del", "f", "--prefix", "--prev-kv"}, formats: []string{"fields"}},
	{args: []string{"put", "foo", "again"}},
	{args: []string{"del", "", "--from-key", "--prev-kv"}},
	{args: []string{"del"}},

	// txn
	{args: []string{"put", "t1", "v1"}},
	{args: []string{"txn"}, formats: allFormats,
		stdin: "value(\"t1\") = \"v1\"\nmod(\"t1\") > \"0\"\n\nput t2 \"two words\"\nget t1\ndel nothing\n\nput t3 no\n\n"},
	{args: []string{"txn"}, formats: []string{"simple", "fields", "json"},
		stdin: "ver(\"t1\") != \"1\"\n\nput t2 x\n\nget t --prefix --keys-only\nput t2 y --prev-kv\n\n"},
	{args: []string{"txn", "-i"}, stdin: "c(\"t1\") < \"100\"\n\nput 't4' 'single quoted'\n\n\n"},
	{args: []string{"txn"}, stdin: "\n\n\n"},
	{args: []string{"txn"}, stdin: "mod(\"t1\") > 0\n\n\n\n"},
	{args: []string{"txn"}, stdin: "mod(t1) > \"0\"\n\n\n\n"},
	{args: []string{"txn"}, stdin: "foo(\"t1\") = \"1\"\n\n\n\n"},
	{args: []string{"txn"}, stdin: "mod(\"t1\") > \"x\"\n\n\n\n"},
	{args: []string{"txn"}, stdin: "\n\nbogus t1\n\n\n"},
	{args: []string{"txn"}, stdin: "\n\nget\n\n\n"},
	{args: []string{"txn"}, stdin: "\n\nput t5 a\nput t5 b\n\n\n"},
	{args: []string{"txn"}, stdin: "value(\"t1\") = \"v1\"\n"},

	// watch, replaying history from a revision; the last event is on
	// "w/end" so that the harness knows when all has arrived.
	{args: []string{"put", "w/a", "1"}},
	{args: []string{"put", "w/a", "2"}},
	{args: []string{"del", "w/a"}},
	{args: []string{"put", "w/end", "."}},
	{args: []string{"watch", "w/", "--prefix", "--rev", "1"}, formats: []string{"simple", "json", "fields"}, until: "w/end"},
	{args: []string{"watch", "w/", "--prefix", "--rev", "1", "--prev-kv"}, formats: []string{"simple", "json", "fields"}, until: "w/end"},
	{args: []string{"watch", "w/end", "--rev", "1", "--", "sh", "-c", `echo "$ETCD_WATCH_EVENT_TYPE $ETCD_WATCH_KEY $ETCD_WATCH_VALUE"`},
		until: `"w/end" "."`}, // the command's output, printed after the event
	{args: []string{"watch", "-i"}, stdin: "bogus\n\nwatch\nwatch w/ --prefix --rev 1 --prev-kv\n",
		formats: []string{"simple", "json"}, until: "w/end"},
	{args: []string{"watch"}},
	{args: []string{"watch", "a", "b", "--prefix"}},

	// The hash covers the leases attached to keys, whose IDs vary: hash
	// before any.
	{args: []string{"endpoint", "hashkv"}, formats: allFormats},
	{args: []string{"endpoint", "hashkv", "--rev", "30", "--hex"}, formats: []string{"simple", "fields"}},

	// lease
	{args: []string{"lease", "grant", "1000"}, formats: allFormats},
	{args: []string{"lease", "revoke", "{lease2}"}, formats: []string{"simple"}},
	{args: []string{"lease", "revoke", "{lease3}"}, formats: []string{"json"}},
	{args: []string{"lease", "revoke", "{lease4}"}, formats: []string{"fields"}},
	{args: []string{"lease", "revoke", "{lease5}"}},
	{args: []string{"lease", "revoke", "{lease5}"}},
	{args: []string{"put", "leased", "v", "--lease", "{lease1}"}},
	{args: []string{"lease", "timetolive", "{lease1}"}, formats: allFormats, normalize: []normalizer{remainingTTL}},
	{args: []string{"lease", "timetolive", "{lease1}", "--keys"}, formats: allFormats, normalize: []normalizer{remainingTTL}},
	{args: []string{"lease", "timetolive", "{lease2}"}, formats: []string{"simple", "json", "fields"}},
	{args: []string{"lease", "list"}, formats: allFormats},
	{args: []string{"lease", "list", "--hex"}, formats: []string{"fields"}},
	{args: []string{"lease", "keep-alive", "--once", "{lease1}"}, formats: allFormats},
	{args: []string{"lease", "keep-alive", "--once", "{lease2}"}},
	{args: []string{"lease", "keep-alive", "{lease1}"}, formats: []string{"simple"}, until: "keepalived"},
	{args: []string{"lease", "grant"}},
	{args: []string{"lease", "grant", "x"}},
	{args: []string{"lease", "revoke", "zz"}},
	{args: []string{"lease", "timetolive"}},

	// compaction
	{args: []string{"compaction", "3"}, formats: allFormats},
	{args: []string{"compaction", "2"}},
	{args: []string{"compaction", "8", "--physical"}},
	{args: []string{"compaction"}},
	{args: []string{"compaction", "x"}},
	{args: []string{"get", "foo", "--rev", "4"}},
	{args: []string{"watch", "foo", "--rev", "2"}, formats: []string{"simple", "json", "fields"}},

	// cluster and maintenance
	{args: []string{"member", "list"}, formats: allFormats},
	{args: []string{"member", "list", "--hex"}, formats: []string{"json", "fields"}},
	{args: []string{"member", "list", "--consistency", "s"}},
	// Added members have new IDs in each run: their order among the others
	// varies, and formats that cannot be normalised for it are left out.
	{args: []string{"member", "add", "learner", "--learner", "--peer-urls", "http://127.0.0.1:1"}, normalize: []normalizer{sortInitialCluster}},
	{args: []string{"member", "list"}, normalize: []normalizer{sortLines}},
	{args: []string{"member", "update", "{member1}", "--peer-urls", "http://127.0.0.1:2"}, formats: []string{"simple", "fields"}},
	{args: []string{"member", "promote", "{member1}"}},
	{args: []string{"member", "remove", "{member1}"}, formats: []string{"json"}},
	{args: []string{"member", "add", "l2", "--learner", "--peer-urls", "http://127.0.0.1:3"}, formats: []string{"fields"}},
	{args: []string{"member", "remove", "{member2}"}, formats: []string{"fields"}},
	{args: []string{"member", "add", "l3", "--peer-urls", "http://127.0.0.1:4", "--learner"}, normalize: []normalizer{sortInitialCluster}},
	{args: []string{"member", "remove", "{member3}", "--hex"}, formats: []string{"json"}},
	{args: []string{"member", "add"}},
	{args: []string{"member", "add", "x"}},
	{args: []string{"member", "add", "x", "http://127.0.0.1:9", "y"}},
	{args: []string{"member", "remove"}},
	{args: []string{"member", "remove", "zz"}},
	{args: []string{"member", "remove", "1"}},
	{args: []string{"endpoint", "health"}, formats: allFormats, normalize: []normalizer{durations}},
	{args: []string{"endpoint", "health", "--cluster"}, formats: []string{"simple", "json"}, normalize: []normalizer{durations}},
	{args: []string{"endpoint", "status"}, formats: allFormats, normalize: []normalizer{dbSizes}},
	{args: []string{"endpoint", "status", "--cluster"}, formats: []string{"simple", "json"}, normalize: []normalizer{dbSizes}},
	{args: []string{"alarm", "list"}, formats: allFormats},
	{args: []string{"alarm", "disarm"}, formats: allFormats},
	{args: []string{"defrag"}, normalize: []normalizer{durations}},
	{args: []string{"defrag", "--cluster"}, formats: []string{"json"}, normalize: []normalizer{durations}},
	{args: []string{"snapshot", "save", filepath.Join("{dir}", "snap.db")}},
	{args: []string{"snapshot", "save"}},
	{args: []string{"snapshot", "save", filepath.Join("{dir}", "missing", "snap.db")}},
	{args: []string{"move-leader", "{self}"}, formats: allFormats},
	{args: []string{"move-leader"}},
	{args: []string{"move-leader", "zz"}},
	{args: []string{"move-leader", "1"}},

	// lock, elect, make-mirror, check. The lock and election keys end with
	// the session's lease ID, which etcdctl leaves to expire and cairn
	// revokes: normalised. check datascale's memory figure is the server's.
	{args: []string{"lock"}},
	{args: []string{"lock", "cl", "--", "sh", "-c", `echo "locked $ETCD_LOCK_KEY at $ETCD_LOCK_REV"`}, normalize: []normalizer{sessionKeys}},
	{args: []string{"lock", "cl", "--", "sh", "-c", "exit 3"}},
	{args: []string{"lock", "cl", "--", "no-such-command"}},
	{args: []string{"lock", "cl"}, formats: []string{"simple", "fields"}, until: "cl/", normalize: []normalizer{sessionKeys}},
	{args: []string{"elect"}},
	{args: []string{"elect", "ce"}},
	{args: []string{"elect", "ce", "a", "b"}},
	{args: []string{"elect", "-l", "ce", "proposal"}},
	{args: []string{"elect", "ce", "proposal"}, formats: []string{"simple", "fields"}, until: "proposal", normalize: []normalizer{sessionKeys}},
	{args: []string{"put", "ce/candidate", "leader"}},
	{args: []string{"elect", "-l", "ce"}, formats: []string{"simple", "fields"}, until: "leader"},
	{args: []string{"del", "ce/candidate"}},
	{args: []string{"make-mirror"}},
	{args: []string{"make-mirror", "a", "b"}},
	{args: []string{"make-mirror", "--dest-prefix", "x", "--no-dest-prefix", "127.0.0.1:1"}},
	{args: []string{"check", "perf", "--load", "q"}},
	{args: []string{"check", "datascale", "--load", "q"}},
	{args: []string{"put", "/etcdctl-check-perf/x", "y"}},
	{args: []string{"check", "perf"}, normalize: []normalizer{toolName}},
	{args: []string{"check", "datascale", "--prefix", "/etcdctl-check-perf/"}, normalize: []normalizer{toolName}},
	{args: []string{"del", "/etcdctl-check-perf/x"}},
	{args: []string{"check", "datascale", "--auto-compact", "--auto-defrag"}, normalize: []normalizer{memoryUsed, progressBars}},

	// users, roles, authentication
	{args: []string{"user", "add", "root:rootpw"}, formats: allFormats},
	{args: []string{"user", "add", "alice", "--interactive=false"}, stdin: "alicepw\n", formats: []string{"json"}},
	{args: []string{"user", "add", "bob", "--new-user-password", "bobpw"}},
	{args: []string{"role", "add", "reader"}, formats: allFormats},
	{args: []string{"role", "grant-permission", "reader", "read", "/a", "/b"}, formats: allFormats},
	{args: []string{"role", "grant-permission", "reader", "readwrite", "/p/", "--prefix"}},
	{args: []string{"role", "grant-permission", "reader", "write", "/w", "--from-key"}},
	{args: []string{"role", "grant-permission", "reader", "read", "/k"}},
	{args: []string{"role", "grant-permission", "reader", "execute", "/k"}},
	{args: []string{"role", "grant-permission", "reader", "read", "/k", "/l", "--prefix"}},
	{args: []string{"role", "get", "reader"}, formats: allFormats},
	{args: []string{"user", "grant-role", "alice", "reader"}, formats: []string{"simple", "json", "fields"}},
	{args: []string{"user", "grant-role", "alice", "root"}},
	{args: []string{"user", "get", "alice"}, formats: allFormats},
	{args: []string{"user", "get", "alice", "--detail"}, formats: allFormats},
	{args: []string{"user", "get", "bob"}},
	{args: []string{"user", "list"}, formats: allFormats},
	{args: []string{"role", "list"}, formats: allFormats},
	{args: []string{"role", "revoke-permission", "reader", "/k"}},
	{args: []string{"role", "revoke-permission", "reader", "/p/", "--prefix"}, formats: []string{"json"}},
	{args: []string{"role", "revoke-permission", "reader", "/w", "--from-key"}},
	{args: []string{"role", "revoke-permission", "reader", "/a", "/b"}, formats: []string{"fields"}},
	{args: []string{"role", "revoke-permission", "reader", "/nope"}},
	{args: []string{"user", "revoke-role", "alice", "root"}, formats: []string{"simple", "json"}},
	{args: []string{"user", "passwd", "bob", "--interactive=false"}, stdin: "newpw\n", formats: []string{"simple", "fields"}},
	{args: []string{"user", "delete", "bob"}, formats: []string{"simple", "json"}},
	{args: []string{"user", "delete", "bob"}},
	{args: []string{"user", "get"}},
	{args: []string{"role", "get", "nobody"}},
	{args: []string{"auth", "status"}, formats: allFormats},
	{args: []string{"auth", "enable"}, formats: []string{"json"}},
	{args: []string{"get", "foo"}},
	{args: []string{"--user", "alice:wrong", "get", "foo"}},
	{args: []string{"--user", "alice:alicepw", "get", "/a"}},
	{args: []string{"--user", "alice:alicepw", "put", "/a", "x"}},
	{args: []string{"--user", "root", "--password", "rootpw", "auth", "status"}, formats: []string{"simple", "json"}},
	{args: []string{"--user", "root:rootpw", "role", "delete", "reader"}, formats: []string{"simple", "fields"}},
	{args: []string{"--user", "root:rootpw", "auth", "disable"}, formats: []string{"fields"}},

	// global flags
	{args: []string{"get", "foo"}, formats: []string{"yaml"}},

	// downgrade, last: enabling one lowers the cluster and storage
	// versions, which other steps print. Once a downgrade is enabled, the
	// leader lowers the cluster version when it gets to it (etcd within
	// seconds, cairn at once), so the cancel prints either version.
	{args: []string{"downgrade", "validate", "3.6"}, formats: allFormats},
	{args: []string{"downgrade", "validate", "3.6.0-rc.1"}},
	{args: []string{"downgrade", "validate"}},
	{args: []string{"downgrade", "validate", ""}},
	{args: []string{"downgrade", "validate", "3.6", "3.5"}},
	{args: []string{"downgrade", "validate", "v3.6"}},
	{args: []string{"downgrade", "validate", "3.5"}, formats: []string{"json"}},
	{args: []string{"downgrade", "validate", "3.7"}},
	{args: []string{"downgrade", "enable"}},
	{args: []string{"downgrade", "enable", "3.8"}},
	{args: []string{"downgrade", "cancel", "ignored"}, formats: []string{"simple", "json", "fields"}},
	{args: []string{"downgrade", "enable", "3.6"}, formats: []string{"json"}},
	{args: []string{"downgrade", "cancel"}, normalize: []normalizer{clusterVersion}},
}

// TestCompatibilityWithEtcdctl runs compatScript with both tools and
// compares them step by step.
func TestCompatibilityWithEtcdctl(t *testing.T) {
	etcdctl := etcdref.Bin(t, "etcdctl")
	cairn := clienttest.CairnBinary(t)
	for _, server := range clienttest.Servers(t) {
		t.Run(server.Name, func(t *testing.T) {
			cluster := clienttest.StartCluster(t, clienttest.Options{Server: server.Command})
			want := runScript(t, etcdctl, cluster, compatScript)
			got := runScript(t, cairn, cluster, compatScript)
			compareRuns(t, compatScript, want, got)
		})
	}
}

// compareRuns reports every step whose outcome differs between etcdctl
// (want) and cairn (got).
func compareRuns(t *testing.T, script []step, want, got [][]outcome) {
	t.Helper()
	same := 0
	for i, s := range script {
		for j, format := range formatsOf(s) {
			w, g := want[i][j], got[i][j]
			if w == g {
				same++
				continue
			}
			t.Errorf("step %d, %s%s:\n%s", i, s, formatSuffix(format), describeDiff(w, g))
		}
	}
	t.Logf("%d runs of %d steps printed the same with both tools", same, len(script))
}

func formatSuffix(format string) string {
	if format == "" {
		return ""
	}
	return " -w " + format
}

// describeDiff shows how two outcomes differ.
func describeDiff(want, got outcome) string {
	var b strings.Builder
	if want.code != got.code {
		fmt.Fprintf(&b, "exit code: etcdctl %d, cairn %d\n", want.code, got.code)
	}
	for _, part := range []struct{ name, want, got string }{
		{"stdout", want.stdout, got.stdout},
		{"stderr", want.stderr, got.stderr},
	} {
		if part.want != part.got {
			fmt.Fprintf(&b, "%s of etcdctl:\n%s\n%s of cairn:\n%s\n", part.name, indent(part.want), part.name, indent(part.got))
		}
	}
	return b.String()
}

func indent(s string) string {
	return "    | " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    | ")
}

var (
	sessionKey       = regexp.MustCompile(`\b(cl|ce)/(<lease\d+>|[0-9a-f]{1,16})`)
	sessionLease     = regexp.MustCompile(`"Lease" : (<lease\d+>|\d+)`)
	memoryFigure     = regexp.MustCompile(`memory used : -?\d+(\.\d+)? MB`)
	progressBar      = regexp.MustCompile(`\d+ / \d+ \[[-_>]*\] \d+\.\d+% (\?|\d+) p/s`)
	deleteSuggestion = regexp.MustCompile(`\b(etcdctl|cairn) del --prefix`)
)

// sessionKeys replaces the lease IDs of lock and election keys.
func sessionKeys(s string) string {
	s = sessionKey.ReplaceAllString(s, "$1/<session>")
	return sessionLease.ReplaceAllString(s, `"Lease" : <session>`)
}

// memoryUsed replaces the memory figure of check datascale.
func memoryUsed(s string) string { return memoryFigure.ReplaceAllString(s, "memory used : <memory>") }

// progressBars drops etcdctl's progress bars, which it draws even when its
// output is not a terminal (cairn draws them on terminals only).
func progressBars(s string) string { return progressBar.ReplaceAllString(s, "") }

var reportedClusterVersion = regexp.MustCompile(`cluster version 3\.[67]\b`)

// clusterVersion replaces the cluster version a downgrade command reports.
func clusterVersion(s string) string {
	return reportedClusterVersion.ReplaceAllString(s, "cluster version <version>")
}

// toolName replaces the name of the tool in the commands it suggests.
func toolName(s string) string { return deleteSuggestion.ReplaceAllString(s, "<tool> del --prefix") }
