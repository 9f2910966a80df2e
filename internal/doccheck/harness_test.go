package doccheck

import (
	"slices"
	"strings"
	"testing"
)

// The tests of the test's own parts: what counts as an example, a marker,
// a matching output.

func TestExtractCommandsOutputsAndMarkers(t *testing.T) {
	doc := strings.Join([]string{
		"# title",
		"```console",
		"$ cairn put k v",
		"OK",
		"$ cairn serve --name m1 \\",
		"  --data-dir m1 &",
		"$ for m in a b; do \\",
		">   echo $m",
		"> done",
		"$ cat > c.yml <<EOF",
		"> name: m1",
		"> EOF",
		"```",
		"",
		"<!-- doc-example: skip (three hosts) -->",
		"```console",
		"$ ssh host1",
		"```",
		"<!-- doc-example: needs etcdctl, etcdutl -->",
		"```console",
		"$ etcdctl get k",
		"```",
		"```text",
		"just output",
		"```",
	}, "\n")
	blocks, errs := extract(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(blocks) != 3 {
		t.Fatalf("got %d blocks, want 3", len(blocks))
	}
	first := blocks[0].examples
	want := []example{
		{line: 3, cmd: "cairn put k v", want: []string{"OK"}},
		{line: 5, cmd: "cairn serve --name m1 \\\n  --data-dir m1 &"},
		{line: 7, cmd: "for m in a b; do \\\n  echo $m\ndone"},
		{line: 10, cmd: "cat > c.yml <<EOF\nname: m1\nEOF"},
	}
	if len(first) != len(want) {
		t.Fatalf("got %d examples, want %d: %+v", len(first), len(want), first)
	}
	for i := range want {
		if first[i].line != want[i].line || first[i].cmd != want[i].cmd || !slices.Equal(first[i].want, want[i].want) {
			t.Errorf("example %d: got %+v, want %+v", i, first[i], want[i])
		}
	}
	if blocks[1].skip != "three hosts" || blocks[1].line != 16 {
		t.Errorf("skipped block: got %+v", blocks[1])
	}
	if !slices.Equal(blocks[2].needs, []string{"etcdctl", "etcdutl"}) {
		t.Errorf("needs: got %v", blocks[2].needs)
	}
}

func TestExtractRefusesWhatBreaksTheConventions(t *testing.T) {
	for name, doc := range map[string]string{
		"sh block":             "```sh\ncairn get k\n```",
		"command in text":      "```text\n$ cairn get k\n```",
		"output first":         "```console\nOK\n$ cairn get k\n```",
		"dangling marker":      "<!-- doc-example: skip (why) -->\n\nsome text\n```console\n$ x\n```",
		"marker before text":   "<!-- doc-example: skip (why) -->\n```text\nx\n```",
		"skip without a why":   "<!-- doc-example: skip -->\n```console\n$ x\n```",
		"unknown marker":       "<!-- doc-example: maybe -->\n```console\n$ x\n```",
		"fence never closed":   "```console\n$ x\n",
		"marker at the end":    "text\n<!-- doc-example: skip (why) -->\n",
		"bash block, indented": "  ```bash\n  ls\n  ```",
	} {
		if _, errs := extract(doc); len(errs) == 0 {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestOutputsMatchLoosely(t *testing.T) {
	got := strings.Join([]string{
		"┌──────────────────┬─────────┬──────┐",
		"│        ID        │ STATUS  │ NAME │",
		"│ 9b58dcbe45a3048d │ started │   m2 │",
		"└──────────────────┴─────────┴──────┘",
		"127.0.0.1:41234 is healthy: successfully committed proposal: took = 850.3µs",
	}, "\n")
	for _, want := range [][]string{
		{"│ ID │ STATUS │ NAME │"},
		{"│ 82039f3eee02bfb3 │ started │ m2 │", "┌───┬───┬───┐"},
		{"...", "127.0.0.1:2379 is healthy: successfully committed proposal: took = 144.074832ms"},
		{"127.0.0.1:2379 is healthy: ..."},
	} {
		if w, missing := missingLine(want, got); missing {
			t.Errorf("%q: reported missing", w)
		}
	}
	for _, want := range [][]string{
		{"│ 82039f3eee02bfb3 │ stopped │ m2 │"},              // another word
		{"│ 82039f3eee02bfb3 │ started │ m1 │"},              // another name
		{"127.0.0.1:2379 is unhealthy"},                      // not there
		{"127.0.0.1:2379 is unhealthy: ..."},                 // nor this beginning
		{"│ ID │ STATUS │ NAME │", "│ ID │ STATUS │ NAME │"}, // twice
	} {
		if _, missing := missingLine(want, got); !missing {
			t.Errorf("%q: matched", want)
		}
	}
}

func TestCheckWantsFailuresShown(t *testing.T) {
	ok := result{rc: 0, stdout: "OK\n"}
	failed := result{rc: 1, stderr: "Error: etcdserver: mvcc: database space exceeded\n"}
	if err := check(example{want: []string{"OK"}}, ok); err != nil {
		t.Error(err)
	}
	if err := check(example{want: []string{"OK"}}, failed); err == nil {
		t.Error("a failing command passed")
	}
	shownFailing := example{want: []string{"Error: etcdserver: mvcc: database space exceeded"}}
	if err := check(shownFailing, failed); err != nil {
		t.Error(err)
	}
	if err := check(shownFailing, ok); err == nil {
		t.Error("a command shown failing passed by succeeding")
	}
}

func TestSlugIsGitHubs(t *testing.T) {
	for heading, want := range map[string]string{
		"Recovering a cluster":                             "recovering-a-cluster",
		"etcd 3.7.3's own e2e suite, with cairn as `etcd`": "etcd-373s-own-e2e-suite-with-cairn-as-etcd",
		"The path of a write":                              "the-path-of-a-write",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}
