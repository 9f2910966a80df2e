//go:build linux

package diskfaults

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/faultfs"
	"github.com/cairnkv/cairn/internal/testnet"
)

// diagnose runs `cairn diagnose --cluster` against the cluster through
// member m and returns its report and exit code.
func (c *cluster) diagnose(m *member, window time.Duration) (string, int) {
	c.t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(cairnBin, "--endpoints", m.curl, "diagnose", "--cluster", "--sample", window.String())
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	c.t.Logf("cairn diagnose:\n%s", out.String())
	return out.String(), code
}

// wantVerdict fails the test unless the report has a line that holds
// every one of wants.
func wantVerdict(t *testing.T, report string, wants ...string) {
	t.Helper()
	for _, line := range strings.Split(report, "\n") {
		found := true
		for _, w := range wants {
			found = found && strings.Contains(line, w)
		}
		if found {
			return
		}
	}
	t.Errorf("no verdict line holds %q", wants)
}

// TestDiagnoseNamesWhatIsWrong stages five conditions on clusters of
// cairn and of etcd 3.7.3 and checks that `cairn diagnose --endpoints`
// names each: healthy, a member killed, a member whose disk is slow, a db
// near its quota and mostly free, and a learner, caught up (it can be
// promoted) and then behind.
func TestDiagnoseNamesWhatIsWrong(t *testing.T) {
	for srv, bin := range binaries(t) {
		t.Run(srv, func(t *testing.T) {
			t.Run("healthy, then a member killed", func(t *testing.T) {
				c := startCluster(t, bin(t))
				report, code := c.diagnose(c.members[0], time.Second)
				if code != 0 {
					t.Errorf("exit %d on a healthy cluster", code)
				}
				wantVerdict(t, report, "INFO", "healthy: 3 members answer")
				c.members[2].kill()
				report, code = c.diagnose(c.members[0], time.Second)
				if code == 0 {
					t.Error("exit 0 with a member down")
				}
				wantVerdict(t, report, "CRITICAL", "member m3", "does not answer")
			})
			t.Run("slow disk", func(t *testing.T) {
				c := startCluster(t, bin(t))
				slow := c.members[1]
				c.fs.Set(faultfs.Faults{FsyncDelay: 300 * time.Millisecond, Only: c.onMember(slow)})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go func() { // writes during the window, so that every member fsyncs
					cli := c.client(c.members[0])
					for i := 0; ctx.Err() == nil; i++ {
						wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
						cli.Put(wctx, fmt.Sprint("k", i%10), "v")
						wcancel()
					}
				}()
				report, _ := c.diagnose(c.members[0], 3*time.Second)
				wantVerdict(t, report, "WARNING", "WAL fsync p99", "on m2: the disk is the bottleneck")
				c.fs.Set(faultfs.Faults{})
			})
			t.Run("db near its quota and fragmented", func(t *testing.T) {
				c := startClusterOn(t, bin(t), 1, "--quota-backend-bytes", fmt.Sprint(36<<20))
				cli := c.client(c.members[0])
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				value := strings.Repeat("x", 512<<10)
				for i := range 52 { // 26 MiB
					if _, err := cli.Put(ctx, fmt.Sprint("big/", i), value); err != nil {
						t.Fatal(err)
					}
				}
				resp, err := cli.Delete(ctx, "big/", clientv3.WithPrefix())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
					t.Fatal(err)
				}
				report, _ := c.diagnose(c.members[0], time.Second)
				wantVerdict(t, report, "WARNING", "of its quota", "free: defragment m1")
			})
			t.Run("learner caught up, then behind", func(t *testing.T) {
				c := startCluster(t, bin(t))
				l := c.addLearner()
				report, _ := c.diagnose(c.members[0], time.Second)
				wantVerdict(t, report, "learner "+l.name, "caught up: it can be promoted")
				// The learner's next WAL fsync stalls for longer than the
				// writes and the diagnosis take: it falls behind by all of them.
				c.fs.Set(faultfs.Faults{FsyncDelay: 15 * time.Second, Only: c.onMember(l)})
				defer c.fs.Set(faultfs.Faults{})
				c.putMany(c.members[0], 3000)
				report, code := c.diagnose(c.members[0], time.Second)
				if code == 0 {
					t.Error("exit 0 with a learner behind")
				}
				wantVerdict(t, report, "WARNING", "learner "+l.name+" lags", "entries behind the leader")
			})
		})
	}
}

// addLearner adds a fourth member as a learner, on the first mount, starts
// it and waits until it answers.
func (c *cluster) addLearner() *member {
	c.t.Helper()
	l := &member{name: "m4", dataDir: filepath.Join(c.fs.Dir, "m4"), logPath: filepath.Join(c.t.TempDir(), "m4.log"),
		curl: testnet.FreeURL(c.t), purl: testnet.FreeURL(c.t)}
	// Both servers refuse a new member until every member has been
	// connected for a while ("unhealthy cluster").
	var resp *clientv3.MemberAddResponse
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := c.client(c.members[0]).MemberAddAsLearner(ctx, []string{l.purl})
		cancel()
		if err == nil {
			resp = r
			break
		}
		if !strings.Contains(err.Error(), "unhealthy cluster") || time.Now().After(deadline) {
			c.t.Fatal(err)
		}
	}
	var initial []string
	for _, m := range resp.Members {
		name := m.Name
		if m.ID == resp.Member.ID {
			name = l.name
		}
		for _, u := range m.PeerURLs {
			initial = append(initial, name+"="+u)
		}
	}
	l.args = []string{"--name", l.name, "--data-dir", l.dataDir,
		"--listen-client-urls", l.curl, "--advertise-client-urls", l.curl,
		"--listen-peer-urls", l.purl, "--initial-advertise-peer-urls", l.purl,
		"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "existing"}
	c.members = append(c.members, l)
	c.start(l)
	cli := c.client(l)
	deadline := time.Now().Add(30 * time.Second)
	for {
		sctx, scancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(sctx, l.curl)
		scancel()
		if err == nil && st.RaftAppliedIndex > 0 && st.Leader != 0 {
			return l
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("learner %s not answering after 30s: %v", l.name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// putMany puts n keys through member m from 32 writers and fails the
// test at the first failed put.
func (c *cluster) putMany(m *member, n int) {
	c.t.Helper()
	cli := c.client(m)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			for i := w; i < n; i += 32 {
				if _, err := cli.Put(ctx, fmt.Sprint("many/", i), "v"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		c.t.Fatal(err)
	}
}
