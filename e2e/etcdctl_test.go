package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/testnet"
)

// etcdctlScript is run by the real etcdctl 3.7.3 against a fresh real etcd
// and against a fresh cairn serve on the same ports (hence the same member
// and cluster IDs): every step must print the same thing.
var etcdctlScript = [][]string{
	{"put", "a", "1"},
	{"put", "b", "2", "-w", "json"},
	{"put", "b", "3", "--prev-kv", "-w", "fields"},
	{"get", "", "--prefix", "-w", "json"},
	{"get", "", "--from-key", "--keys-only", "--limit", "1", "-w", "json"},
	{"get", "a", "--rev", "2", "-w", "fields"},
	{"get", "", "--prefix", "--sort-by", "VALUE", "--order", "DESCEND"},
	{"txn", "-w", "json"}, // stdin below
	{"del", "a", "--prev-kv", "-w", "json"},
	{"del", "nothing"},
	{"lease", "grant", "100", "-w", "json"},
	{"lease", "list"},
	{"compaction", "3"},
	{"get", "a", "--rev", "2"},
	{"get", "b", "--rev", "99"},
	{"member", "list", "-w", "json"},
	{"member", "list", "-w", "table"},
	{"endpoint", "status", "-w", "json"},
	{"endpoint", "hashkv", "-w", "json"},
	{"endpoint", "health", "-w", "json"},
	{"alarm", "list"},
	{"put", "", "x"},
	{"watch", "b", "--rev", "1", "-w", "json"}, // both end it: compacted
	{"watch", "b", "--rev", "4", "-w", "json"}, // ends by timeout below
	{"watch", "", "--prefix", "--rev", "4"},
	{"lease", "grant", "300"},
	{"put", "leased", "v", "--lease", "$LEASE"},
	{"lease", "timetolive", "$LEASE", "--keys", "-w", "json"},
	{"lease", "revoke", "$LEASE"},
	{"get", "leased"},
	{"lease", "timetolive", "1234"},
	{"alarm", "disarm"},
	{"defrag"},
	{"move-leader", "1234"},
	{"get", "b", "--consistency", "s", "-w", "fields"},
	{"snapshot", "save", "snap.db"},
}

var txnStdin = "mod(\"a\") > \"0\"\n\nput c 3\nget a\n\nput d 4\n"

// normalise removes what legitimately differs between two servers: lease
// IDs (random by design), timings, sizes of the db file, raft indexes.
func normalise(s string) string {
	for _, r := range []struct{ re, repl string }{
		{`"ID":\d+,"TTL"`, `"ID":<lease>,"TTL"`},
		{`"id":\d+,"ttl"`, `"id":<lease>,"ttl"`},
		{`took [0-9.]+[a-zµ]+`, `took <t>`},
		{`(?m)^[0-9a-f]{16}$`, `<lease>`},
		{`lease [0-9a-f]{16}`, `lease <lease>`},
		{`"took":"[^"]*"`, `"took":"<t>"`},
		{`took = [0-9.]+[a-zµ]+`, `took = <t>`},
		{`"dbSize(InUse)?":\d+`, `"dbSize$1":<n>`},
		{`"raft(Applied)?Index":\d+`, `"raft${1}Index":<n>`},
	} {
		s = regexp.MustCompile(r.re).ReplaceAllString(s, r.repl)
	}
	return s
}

func TestEtcdctlSeesNoDifference(t *testing.T) {
	etcdctl := etcdref.Bin(t, "etcdctl")
	etcd := etcdref.Bin(t, "etcd")
	curl, purl := testnet.FreeURL(t), testnet.FreeURL(t)
	run := func(server []string) []string {
		dir := t.TempDir()
		args := append(append([]string(nil), server...), "--name", "x", "--data-dir", filepath.Join(dir, "data"),
			"--listen-client-urls", curl, "--advertise-client-urls", curl,
			"--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl, "--initial-cluster", "x="+purl)
		cmd := exec.Command(args[0], args[1:]...)
		logf, _ := os.Create(filepath.Join(dir, "log"))
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait(); logf.Close() }()
		waitFor(t, 20*time.Second, server[0]+" healthy", func() bool {
			resp, err := http.Get(curl + "/health")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		var outs []string
		lease := ""
		for _, script := range etcdctlScript {
			step := append([]string(nil), script...)
			for i, a := range step {
				if a == "$LEASE" {
					step[i] = lease
				}
			}
			c := exec.Command(etcdctl, append([]string{"--endpoints", strings.TrimPrefix(curl, "http://"), "--command-timeout", "2s"}, step...)...)
			if step[0] == "txn" {
				c.Stdin = strings.NewReader(txnStdin)
			}
			if step[0] == "watch" {
				c = exec.Command("timeout", append([]string{"1", etcdctl, "--endpoints", strings.TrimPrefix(curl, "http://")}, step...)...)
			}
			var out bytes.Buffer
			c.Stdout, c.Stderr, c.Dir = &out, &out, dir
			err := c.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if m := regexp.MustCompile(`lease ([0-9a-f]{16}) granted`).FindStringSubmatch(out.String()); m != nil {
				lease = m[1]
			}
			var lines []string
			for _, l := range strings.Split(out.String(), "\n") {
				if !strings.HasPrefix(l, `{"level"`) {
					lines = append(lines, l)
				}
			}
			outs = append(outs, fmt.Sprintf("$ etcdctl %s\n%s[exit %d]", strings.Join(script, " "), normalise(strings.Join(lines, "\n")), code))
		}
		return outs
	}
	want := run([]string{etcd})
	got := run([]string{cairnBin, "serve"})
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("against real etcd:\n%s\nagainst cairn:\n%s", want[i], got[i])
		}
	}
}
