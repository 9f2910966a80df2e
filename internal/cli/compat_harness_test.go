package cli_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/client/clienttest"
)

// This file runs the compatibility script of compat_test.go: the same steps,
// once with etcdctl and once with cairn, each time on a fresh server with
// the same member and cluster IDs, and compares what each step printed.

// allFormats are the output formats a step is run in unless it says.
var allFormats = []string{"simple", "json", "fields", "table", "protobuf"}

// step is one command line of the script, run in each of its formats.
type step struct {
	args []string // after the global flags; see run.expand for {placeholders}
	// formats to run the command in; nil means the default format only.
	formats []string
	stdin   string
	// until makes a command that does not end by itself (watch, keep-alive)
	// run until its output shows this text (plain, quoted or base64), after
	// which it is interrupted; only its output is compared.
	until string
	// normalize lists what varies between two correct runs of the step.
	normalize []normalizer
}

func (s step) String() string { return strings.Join(s.args, " ") }

// outcome is what one run of a step in one format produced.
type outcome struct {
	stdout, stderr string
	code           int
}

// normalizer rewrites output parts that legitimately differ between runs.
type normalizer func(string) string

var (
	durationPattern = regexp.MustCompile(`\d+(\.\d+)?(ns|µs|ms|s)\b`)
	// tableFill is the padding that a normalised cell leaves misaligned.
	tableFill = regexp.MustCompile(`[ ─]+`)
)

// durations replaces measured times, and evens out the table cells they
// were in, whose width depended on them.
func durations(s string) string {
	s = durationPattern.ReplaceAllString(s, "<duration>")
	return tableFill.ReplaceAllString(s, " ")
}

var (
	sizePattern    = regexp.MustCompile(`\d+(\.\d+)? (B|kB|MB|GB)\b|\d+%`)
	dbSizeField    = regexp.MustCompile(`"(dbSize|DBSize)(InUse)?"( : |:)\d+`)
	sizeFieldValue = regexp.MustCompile(`\d+$`)
)

// dbSizes replaces the sizes of the database, which depend on when the
// server happened to commit its batches, and evens out table cells.
func dbSizes(s string) string {
	s = dbSizeField.ReplaceAllStringFunc(s, func(f string) string { return sizeFieldValue.ReplaceAllString(f, "<size>") })
	s = sizePattern.ReplaceAllString(s, "<size>")
	return tableFill.ReplaceAllString(s, " ")
}

// remainingTTL replaces the remaining time of leases, which may tick.
func remainingTTL(s string) string {
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`remaining\(\d+s\)`), regexp.MustCompile(`"ttl":\d+`), regexp.MustCompile(`"TTL" : \d+`),
	} {
		s = re.ReplaceAllString(s, "<ttl>")
	}
	return s
}

// sortLines sorts the lines of s, for outputs whose order varies.
func sortLines(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

var initialClusterLine = regexp.MustCompile(`(?m)^ETCD_INITIAL_CLUSTER="(.*)"$`)

// sortInitialCluster sorts the members listed by member add, whose order
// follows their IDs.
func sortInitialCluster(s string) string {
	return initialClusterLine.ReplaceAllStringFunc(s, func(line string) string {
		members := strings.Split(initialClusterLine.FindStringSubmatch(line)[1], ",")
		slices.Sort(members)
		return `ETCD_INITIAL_CLUSTER="` + strings.Join(members, ",") + `"`
	})
}

// run is one pass of the script with one tool.
type run struct {
	t       *testing.T
	tool    string // path of etcdctl or cairn
	cluster *clienttest.Cluster
	// clients learn the IDs the steps create: anonymous, then as root.
	clients [2]*client.Client
	dir     string // scratch directory for files the steps write
	ids     []registeredID
	// initialMembers are the members the cluster starts with, the same in
	// every run: they are not registered.
	initialMembers []uint64
}

// registeredID is a lease or member created by a step, named by its kind
// and order of creation so that steps and outputs can refer to it.
type registeredID struct {
	name string // lease1, member1, ...
	id   uint64
}

// runScript resets the cluster and runs every step with tool, in order.
func runScript(t *testing.T, tool string, cluster *clienttest.Cluster, script []step) [][]outcome {
	t.Helper()
	cluster.Reset()
	r := &run{t: t, tool: tool, cluster: cluster, dir: t.TempDir()}
	// Until the script turns authentication on, as the script's root user.
	for i, cfg := range []client.Config{
		{Endpoints: cluster.Endpoints()},
		{Endpoints: cluster.Endpoints(), Username: "root", Password: "rootpw"},
	} {
		c, err := client.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		r.clients[i] = c
	}
	for _, m := range cluster.Members {
		r.initialMembers = append(r.initialMembers, cluster.MemberID(m))
	}
	r.waitStorageVersion()
	outcomes := make([][]outcome, len(script))
	for i, s := range script {
		for _, format := range formatsOf(s) {
			out := r.exec(s, format)
			r.register()
			for _, norm := range append([]normalizer{r.normalizeIDs}, s.normalize...) {
				out.stdout, out.stderr = norm(out.stdout), norm(out.stderr)
			}
			outcomes[i] = append(outcomes[i], out)
		}
	}
	return outcomes
}

func formatsOf(s step) []string {
	if s.formats == nil {
		return []string{""}
	}
	return s.formats
}

// waitStorageVersion gives a fresh server a moment to bring the storage
// version of its new database up to its own version (etcd does this in
// the background), so that both runs see the same one.
func (r *run) waitStorageVersion() {
	r.t.Helper()
	clienttest.Poll(r.t, 20*time.Second, "the storage version to reach the server version", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		st, err := r.clients[0].Maintenance.Status(ctx, &pb.StatusRequest{})
		return err == nil && minorVersion(st.GetStorageVersion()) == minorVersion(st.GetVersion())
	})
}

// minorVersion is the "3.7" of "3.7.3".
func minorVersion(v string) string {
	parts := strings.SplitN(v, ".", 3)
	return strings.Join(parts[:min(2, len(parts))], ".")
}

// expand replaces the placeholders of an argument: {lease1}, {member1}...
// by the hexadecimal ID, {self} by the first member's ID, {dir} by the
// scratch directory.
func (r *run) expand(arg string) string {
	arg = strings.ReplaceAll(arg, "{dir}", r.dir)
	arg = strings.ReplaceAll(arg, "{self}", fmt.Sprintf("%x", r.initialMembers[0]))
	for _, id := range r.ids {
		arg = strings.ReplaceAll(arg, "{"+id.name+"}", fmt.Sprintf("%x", id.id))
	}
	return arg
}

// exec runs the tool once.
func (r *run) exec(s step, format string) outcome {
	r.t.Helper()
	args := []string{endpointsFlag(r.cluster)}
	if format != "" {
		args = append(args, "--write-out="+format)
	}
	for _, a := range s.args {
		args = append(args, r.expand(a))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.tool, args...)
	cmd.Stdin = strings.NewReader(s.stdin)
	var stdin io.WriteCloser
	if s.until != "" {
		// Input stays open until the command is interrupted: interactive
		// commands end at the end of their input.
		cmd.Stdin = nil
		var err error
		if stdin, err = cmd.StdinPipe(); err != nil {
			r.t.Fatal(err)
		}
	}
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	if s.until != "" {
		if _, err := io.WriteString(stdin, s.stdin); err != nil {
			r.t.Fatal(err)
		}
		// The marker may come before the rest of its event (-w fields prints
		// an event a line at a time): the tool is interrupted once the
		// marker is out and one poll later nothing more has come.
		seen := -1
		clienttest.Poll(r.t, 20*time.Second, fmt.Sprintf("%q in the output of %s", s.until, s), func() bool {
			out := stdout.String()
			if !containsAnyForm(out, s.until) {
				return false
			}
			done := len(out) == seen
			seen = len(out)
			return done
		})
		_ = cmd.Process.Signal(os.Interrupt)
	}
	err := cmd.Wait()
	if ctx.Err() != nil {
		r.t.Fatalf("%s: %v; output so far:\n%s%s", s, ctx.Err(), stdout.String(), stderr.String())
	}
	out := outcome{stdout: stdout.String(), stderr: withoutLogLines(stderr.String()), code: cmd.ProcessState.ExitCode()}
	if s.until != "" {
		out.stderr, out.code = "", 0
	}
	_ = err // the exit code says it
	return out
}

// containsAnyForm says whether out shows text as is, quoted or in base64.
func containsAnyForm(out, text string) bool {
	return strings.Contains(out, text) || strings.Contains(out, fmt.Sprintf("%q", text)) ||
		strings.Contains(out, base64.StdEncoding.EncodeToString([]byte(text)))
}

// withoutLogLines drops etcdctl's JSON log lines from its stderr.
func withoutLogLines(s string) string {
	var kept []string
	for line := range strings.Lines(s) {
		if !strings.HasPrefix(line, `{"level":`) {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "")
}

// register records the leases and members that appeared since the last
// call, in order of their IDs when several appear at once.
func (r *run) register() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var leases *pb.LeaseLeasesResponse
	r.call(func(c *client.Client) (err error) {
		leases, err = c.Lease.LeaseLeases(ctx, &pb.LeaseLeasesRequest{})
		return err
	})
	var leaseIDs []uint64
	for _, l := range leases.GetLeases() {
		leaseIDs = append(leaseIDs, uint64(l.GetID()))
	}
	r.addNew("lease", leaseIDs)
	r.addNew("member", r.memberIDs())
}

func (r *run) memberIDs() []uint64 {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var members *pb.MemberListResponse
	r.call(func(c *client.Client) (err error) {
		members, err = c.Cluster.MemberList(ctx, &pb.MemberListRequest{})
		return err
	})
	var ids []uint64
	for _, m := range members.GetMembers() {
		ids = append(ids, m.GetID())
	}
	return ids
}

// call makes a call anonymously, or as root once authentication is on.
func (r *run) call(f func(c *client.Client) error) {
	r.t.Helper()
	err := f(r.clients[0])
	if errors.Is(err, rpctypes.ErrUserEmpty) {
		err = f(r.clients[1])
	}
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r *run) addNew(kind string, ids []uint64) {
	slices.Sort(ids)
	for _, id := range ids {
		known := slices.ContainsFunc(r.ids, func(k registeredID) bool { return k.id == id })
		if !known && !slices.Contains(r.initialMembers, id) {
			n := 1
			for _, k := range r.ids {
				if strings.HasPrefix(k.name, kind) {
					n++
				}
			}
			r.ids = append(r.ids, registeredID{name: fmt.Sprintf("%s%d", kind, n), id: id})
		}
	}
}

// normalizeIDs replaces the registered IDs, in every way they are printed,
// and the scratch directory by names.
func (r *run) normalizeIDs(s string) string {
	s = strings.ReplaceAll(s, r.dir, "<dir>")
	for _, id := range r.ids {
		name := "<" + id.name + ">"
		for _, form := range []string{"%016x", "%16x", "%x", "%d"} {
			s = strings.ReplaceAll(s, fmt.Sprintf(form, id.id), name)
		}
	}
	return s
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestMain(m *testing.M) {
	code := m.Run()
	clienttest.RemoveBuilds()
	os.Exit(code)
}
