package doccheck

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/testnet"
)

// commandTimeout bounds one example: the slowest start a 3-member cluster.
const commandTimeout = 30 * time.Second

// repoRoot is the folder of go.mod, two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// documents are the files whose examples run: README.md and docs/*.md,
// relative to the root.
func documents(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		files = append(files, rel)
	}
	sort.Strings(files[1:])
	return files
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// cairnBinDir builds ./cmd/cairn once for the whole test binary, into a
// folder that holds only it.
func cairnBinDir(t *testing.T, root string) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "doccheck-bin-")
		if buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-C", root, "-o", filepath.Join(binDir, "cairn"), "./cmd/cairn").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/cairn: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// TestDocExamples runs every command example of README.md and docs/*.md, a
// document's examples in order in one shell session, in an empty folder in
// which a member runs as `cairn serve` would run there (name default, data
// dir default.cairn), on free ports: 127.0.0.1:2379 and 127.0.0.1:2380 in
// the examples stand for its client and peer addresses, other 127.0.0.1
// ports for free ports of their own, and ETCDCTL_ENDPOINTS points the
// commands without --endpoints at it.
func TestDocExamples(t *testing.T) {
	root := repoRoot(t)
	for _, file := range documents(t, root) {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			text, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				t.Fatal(err)
			}
			blocks, errs := extract(string(text))
			for _, err := range errs {
				t.Errorf("%s: %v", file, err)
			}
			if len(errs) > 0 {
				return
			}
			runDocument(t, root, file, blocks)
		})
	}
}

// runDocument runs the examples of one document's blocks.
func runDocument(t *testing.T, root, file string, blocks []block) {
	var run []block
	ran, skipped := 0, 0
	for _, b := range blocks {
		if why := skipReason(b); why != "" {
			t.Logf("%s:%d: %d example(s) skipped: %s", file, b.line, len(b.examples), why)
			skipped += len(b.examples)
			continue
		}
		run = append(run, b)
	}
	defer func() { t.Logf("%s: %d example(s) run, %d skipped", file, ran, skipped) }()
	if len(run) == 0 {
		return
	}
	bin := cairnBinDir(t, root)
	dir := t.TempDir()
	ports := portMap{t: t, ports: map[string]string{}}
	clientAddr, peerAddr := ports.addr("2379"), ports.addr("2380")
	startMember(t, bin, dir, clientAddr, peerAddr)

	path := bin
	if d := os.Getenv("CAIRN_REFERENCE_ETCD_DIR"); d != "" {
		path += string(os.PathListSeparator) + d
	}
	env := []string{"PATH=" + path + string(os.PathListSeparator) + os.Getenv("PATH"), "ETCDCTL_ENDPOINTS=" + clientAddr}
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "PATH" && !strings.HasPrefix(name, "CAIRN_") &&
			!strings.HasPrefix(name, "ETCD_") && !strings.HasPrefix(name, "ETCDCTL_") {
			env = append(env, kv)
		}
	}
	sh := startShell(t, dir, env)
	for _, b := range run {
		for _, ex := range b.examples {
			cmd := ports.rewrite(ex.cmd)
			res, err := sh.run(cmd, commandTimeout)
			if err == nil {
				err = check(ex, res)
			}
			if err != nil {
				t.Fatalf("%s:%d: $ %s\n%v\nstdout:\n%s\nstderr:\n%s", file, ex.line, cmd, err, res.stdout, res.stderr)
			}
			ran++
		}
	}
}

// skipReason says why a block does not run here, or "".
func skipReason(b block) string {
	if b.skip != "" {
		return b.skip
	}
	for _, n := range b.needs {
		if !haveBinary(n) {
			return fmt.Sprintf("needs %s (not on PATH or in CAIRN_REFERENCE_ETCD_DIR)", n)
		}
	}
	return ""
}

func haveBinary(name string) bool {
	if d := os.Getenv("CAIRN_REFERENCE_ETCD_DIR"); d != "" {
		if _, err := os.Stat(filepath.Join(d, name)); err == nil {
			return true
		}
	}
	_, err := exec.LookPath(name)
	return err == nil
}

// check compares what a command did with what the document says. A command
// shown failing ("Error: ..." among its output) must fail, and its stderr
// counts as output; any other must succeed.
func check(ex example, res result) error {
	fails := false
	for _, w := range ex.want {
		if strings.HasPrefix(w, "Error: ") {
			fails = true
		}
	}
	got := res.stdout
	switch {
	case fails && res.rc == 0:
		return fmt.Errorf("exit status 0, the document shows it failing")
	case fails:
		got += "\n" + res.stderr
	case res.rc != 0:
		return fmt.Errorf("exit status %d", res.rc)
	}
	if w, missing := missingLine(ex.want, got); missing {
		return fmt.Errorf("the output has no line like %q (numbers, IDs and durations may differ)", w)
	}
	return nil
}

// portMap gives each 127.0.0.1 port of a document's examples a free port
// of its own.
type portMap struct {
	t     *testing.T
	ports map[string]string // the document's port -> the one used
}

var addrRE = regexp.MustCompile(`127\.0\.0\.1:([0-9]{2,5})\b`)

func (p *portMap) addr(port string) string {
	if _, ok := p.ports[port]; !ok {
		p.ports[port] = strconv.Itoa(testnet.FreePort(p.t))
	}
	return "127.0.0.1:" + p.ports[port]
}

func (p *portMap) rewrite(s string) string {
	return addrRE.ReplaceAllStringFunc(s, func(a string) string {
		return p.addr(addrRE.FindStringSubmatch(a)[1])
	})
}

// startMember runs a single-member cluster in dir, as `cairn serve` with no
// flags would there but on the given addresses, and waits until it is
// ready; it is killed when the test ends.
func startMember(t *testing.T, bin, dir, clientAddr, peerAddr string) {
	t.Helper()
	curl, purl := "http://"+clientAddr, "http://"+peerAddr
	logPath := filepath.Join(t.TempDir(), "member.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(bin, "cairn"), "serve",
		"--listen-client-urls", curl, "--advertise-client-urls", curl,
		"--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
		"--initial-cluster", "default="+purl)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for {
		if resp, err := http.Get(curl + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("the member exited before it was ready:\n%s", log)
		case <-deadline:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("the member was not ready after 20 s:\n%s", log)
		case <-tick.C:
		}
	}
}
