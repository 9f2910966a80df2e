// The layout rules of the module (docs/design.md, section "Layers"),
// checked on the packages' dependencies as `go list` reports them. Imports
// point down: from the command tree (internal/cli) to the command families
// it attaches, from those to the helpers they share (internal/cliutil), the
// client, the server's side and pkg/.
package cairn_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/cairnkv/cairn"

// importRules are the dependencies the layout forbids: no package in or
// under from may depend, directly or through other packages, on a package
// in or under to (paths relative to the module; tests not counted).
var importRules = []struct{ from, to, why string }{
	{"pkg", "internal", "pkg/ is usable as a library on its own"},
	{"cmd", "internal/etcdref", "the reference etcd is for tests: the binary never builds or runs it"},
	{"internal/forensics", "internal/server", "the offline kit reads pkg/ only and works with no server"},
	{"internal/forensics", "internal/api", "the offline kit reads pkg/ only and works with no server"},
	{"internal/forensics", "internal/client", "the offline kit reads pkg/ only and works with no server"},
	{"internal/forensics", "internal/transport", "the offline kit reads pkg/ only and works with no server"},
	{"internal/bench", "internal/server", "the load commands are clients of a running cluster"},
	{"internal/bench", "internal/api", "the load commands are clients of a running cluster"},
	{"internal/bench", "internal/transport", "the load commands are clients of a running cluster"},
	{"internal/cliutil", "internal/forensics", "the helpers the commands share are below the command families that use them"},
	{"internal/cliutil", "internal/bench", "the helpers the commands share are below the command families that use them"},
	{"internal/cliutil", "internal/server", "the offline kit prints with the helpers the commands share, and works with no server"},
	{"internal/cliutil", "internal/api", "the offline kit prints with the helpers the commands share, and works with no server"},
	{"internal/cliutil", "internal/client", "the offline kit prints with the helpers the commands share, and works with no server"},
	{"internal/server", "internal/api", "internal/api calls into internal/server, never the reverse"},
	{"internal/confhistory", "internal", "the configuration history is raft's alone"},
	{"internal/confhistory", "pkg", "the configuration history is raft's alone"},
	{"internal/memberconfig", "internal/server", "a member's configuration is what the server runs, and knows nothing of how"},
	{"internal/memberconfig", "internal/api", "a member's configuration is what the server runs, and knows nothing of how"},
	{"internal/client", "internal/server", "the client knows nothing of the server's internals"},
	{"internal/client", "internal/api", "the client knows nothing of the server's internals"},
	{"internal/transport", "pkg/store", "the transport knows nothing of keys"},
	{"pkg/store", "pkg/walfmt", "the store knows nothing of the log"},
	{"pkg/backend", "pkg/store", "the backend knows buckets, keys and values, nothing of revisions"},
	{"pkg/boltfile", "pkg/backend", "the bbolt file format is a lower layer than what the buckets hold"},
	{"pkg/boltfile", "pkg/store", "the bbolt file format is a lower layer than what the buckets hold"},
	{"pkg/boltfile", "pkg/keyindex", "the bbolt file format is a lower layer than what the buckets hold"},
	{"pkg/boltfile", "pkg/kvcodec", "the bbolt file format is a lower layer than what the buckets hold"},
	{"pkg/writebehind", "pkg", "writing a file synced as it goes knows nothing of what the file holds"},
	{"pkg/keyindex", "pkg/backend", "the key index is in memory: the store feeds it what the db holds"},
	{"pkg/keyindex", "pkg/store", "the key index is in memory: the store feeds it what the db holds"},
	{"pkg/cluster", "pkg/store", "the cluster's identity and membership rules are a lower layer than the store"},
	{"internal/hashcheck", "internal/server", "the hash checks are driven by the server through an interface"},
	{"internal/alarm", "internal", "the alarm table is the alarm bucket's mirror, built on pkg/store alone"},
	{"internal/featuregate", "internal", "the feature gates are pure logic"},
	{"internal/featuregate", "pkg", "the feature gates are pure logic"},
	{"internal/autocompact", "internal", "the compaction policy is pure logic"},
	{"internal/autocompact", "pkg", "the compaction policy is pure logic"},
	{"internal/autopromote", "internal", "the learner promotion loop is driven by the server through closures"},
	{"internal/autopromote", "pkg", "the learner promotion loop is driven by the server through closures"},
	{"internal/wait", "internal", "waiting by ID or index is generic"},
	{"internal/wait", "pkg", "waiting by ID or index is generic"},
	{"internal/leaderwatch", "internal", "the leader watch is generic"},
	{"internal/peerquery", "internal/server", "the questions a follower asks its leader are carried here and answered by the server"},
	{"internal/raftnode", "internal", "the raft node is raft's RawNode made safe for many goroutines, nothing of etcd"},
	{"internal/raftnode", "pkg", "the raft node is raft's RawNode made safe for many goroutines, nothing of etcd"},
	{"internal/leaderwatch", "pkg", "the leader watch is generic"},
	{"internal/clusterversion", "internal/server", "the cluster version rules are driven by the server through an interface"},
	{"internal/clusterversion", "internal/api", "the cluster version rules are driven by the server through an interface"},
	{"internal/hashcheck", "internal/api", "the hash checks are driven by the server through an interface"},
	{"internal/discovery", "internal/server", "discovery is a client of the discovery cluster, called before the member starts"},
	{"internal/tcpproxy", "internal", "the gateway pipes bytes and knows nothing of etcd"},
	{"internal/tcpproxy", "pkg", "the gateway pipes bytes and knows nothing of etcd"},
	{"internal/grpcproxy", "internal/server", "the gRPC proxy is a client of the cluster"},
	{"internal/grpcproxy", "internal/api", "the gRPC proxy is a client of the cluster"},
	{"internal/grpcproxy", "internal/transport", "the gRPC proxy is a client of the cluster"},
	{"internal/grpcproxy", "pkg", "the gRPC proxy is a client of the cluster and keeps no data"},
	{"internal/grpcproxy/namespace", "internal", "the namespace translation is message rewriting alone"},
}

// topRules are the packages at the top of the layout: no package outside
// pkg's tree but those in or under importers may depend, directly or
// through other packages, on a package in or under pkg (tests not counted).
var topRules = []struct {
	pkg       string
	importers []string
	why       string
}{
	{"internal/cli", []string{"cmd/cairn", "internal/gendocs"},
		"internal/cli is the command tree: it puts serve, the offline kit (internal/forensics) and the load commands (internal/bench) in the tree, and they and the helpers below them (internal/cliutil) never import it back; the binary runs it, gendocs renders its docs"},
}

// listedPackage is what the tests read of `go list -json`.
type listedPackage struct {
	ImportPath string
	Dir        string
	Imports    []string // direct, of the non-test files
	Deps       []string // direct and indirect
}

func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	byPath := map[string]*listedPackage{}
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	for _, r := range importRules {
		matched := false
		for _, p := range pkgs {
			if !under(p.ImportPath, r.from) {
				continue
			}
			matched = true
			for _, dep := range p.Deps {
				if under(dep, r.to) {
					t.Errorf("%s depends on %s (%s), which the layout forbids: %s",
						rel(p.ImportPath), rel(dep), strings.Join(importChain(byPath, p.ImportPath, dep), " -> "), r.why)
				}
			}
		}
		if !matched {
			t.Errorf("rule %s -> %s: no package is in %s", r.from, r.to, r.from)
		}
	}
}

func TestTopPackages(t *testing.T) {
	pkgs := listPackages(t)
	byPath := map[string]*listedPackage{}
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	for _, r := range topRules {
		matched := false
		for _, p := range pkgs {
			if under(p.ImportPath, r.pkg) {
				matched = true
				continue
			}
			if slices.ContainsFunc(r.importers, func(imp string) bool { return under(p.ImportPath, imp) }) {
				continue
			}
			for _, dep := range p.Deps {
				if under(dep, r.pkg) {
					t.Errorf("%s depends on %s (%s); only %s may: %s",
						rel(p.ImportPath), rel(dep), strings.Join(importChain(byPath, p.ImportPath, dep), " -> "),
						strings.Join(r.importers, ", "), r.why)
				}
			}
		}
		if !matched {
			t.Errorf("rule on %s: no package is in %s", r.pkg, r.pkg)
		}
	}
}

// listPackages lists the packages of the module with `go list -json`.
func listPackages(t *testing.T) []*listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Dir,Imports,Deps", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []*listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := &listedPackage{}
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

// under says whether the import path is the module's package dir or one
// below it.
func under(importPath, dir string) bool {
	p := module + "/" + dir
	return importPath == p || strings.HasPrefix(importPath, p+"/")
}

// rel is an import path relative to the module.
func rel(importPath string) string { return strings.TrimPrefix(importPath, module+"/") }

// importChain is a shortest chain of direct imports from one of the
// module's packages to dep, for the message.
func importChain(byPath map[string]*listedPackage, from, dep string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == dep {
			var chain []string
			for p := cur; p != ""; p = prev[p] {
				chain = append(chain, rel(p))
			}
			slices.Reverse(chain)
			return chain
		}
		if p, ok := byPath[cur]; ok {
			for _, imp := range p.Imports {
				if _, seen := prev[imp]; !seen {
					prev[imp] = cur
					queue = append(queue, imp)
				}
			}
		}
	}
	return []string{rel(from), "...", rel(dep)}
}
