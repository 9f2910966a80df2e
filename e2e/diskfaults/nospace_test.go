//go:build linux

package diskfaults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/diskspace"
	"github.com/cairnkv/cairn/internal/testnet"
)

// TestDiskFullRaisesNoSpaceAndKeepsServingReads: a member whose data dir
// is on a small tmpfs that fills up raises the NOSPACE alarm before its
// disk is full, refuses writes with etcd's error, keeps serving reads, and
// lives through the disk filling to the last byte; once space is freed and
// the alarm disarmed, writes go on, and after a restart nothing is lost.
// (etcd 3.7.3 exits at the first write that meets the full disk.)
func TestDiskFullRaisesNoSpaceAndKeepsServingReads(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=256m"); err != nil {
		t.Skipf("cannot mount a tmpfs (%v): this test needs root", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	m := &member{name: "m1", dataDir: filepath.Join(dir, "m1"), logPath: filepath.Join(t.TempDir(), "m1.log"),
		curl: testnet.FreeURL(t), purl: testnet.FreeURL(t)}
	m.args = []string{"--name", m.name, "--data-dir", m.dataDir,
		"--listen-client-urls", m.curl, "--advertise-client-urls", m.curl,
		"--listen-peer-urls", m.purl, "--initial-advertise-peer-urls", m.purl,
		"--initial-cluster", m.name + "=" + m.purl}
	c := &cluster{t: t, bin: cairnBin, members: []*member{m}}
	t.Cleanup(func() {
		m.kill()
		if t.Failed() {
			t.Logf("--- end of the member's log:\n%s", logTail(m, 6000))
		}
	})
	c.start(m)
	c.waitUp(m, 30*time.Second)
	cli := c.client(m)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range 50 {
		if _, err := cli.Put(ctx, fmt.Sprintf("k%02d", i), "before"); err != nil {
			t.Fatal(err)
		}
	}
	if resp, err := cli.AlarmList(ctx); err != nil || len(resp.Alarms) != 0 {
		t.Fatalf("alarms with room on the disk: %v, %v", resp, err)
	}

	// Leave 40 MB: less than the member keeps free (a WAL segment and more).
	free, err := diskspace.Free(dir)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, filepath.Join(dir, "filler"), int64(free)-40<<20)
	var raised *pb.AlarmMember
	waitFor(t, 10*time.Second, "the NOSPACE alarm", func() bool {
		resp, err := cli.AlarmList(ctx)
		if err != nil || len(resp.Alarms) != 1 || resp.Alarms[0].Alarm != pb.AlarmType_NOSPACE {
			return false
		}
		raised = resp.Alarms[0]
		return true
	})
	if _, err := cli.Put(ctx, "refused", "x"); !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("a put with the NOSPACE alarm raised: %v, want %v", err, rpctypes.ErrNoSpace)
	}
	if line := m.logLine("disk space low"); line == "" {
		t.Error("the member's log does not say the disk space is low")
	}

	// The disk fills up to the last byte: the member keeps serving reads.
	fill(t, filepath.Join(dir, "filler2"), 1<<40)
	for range 3 {
		resp, err := cli.Get(ctx, "k", clientv3.WithPrefix())
		if err != nil || len(resp.Kvs) != 50 {
			t.Fatalf("a linearizable read on a full disk: %v, %v", resp, err)
		}
		if _, err := cli.Put(ctx, "refused", "x"); !errors.Is(err, rpctypes.ErrNoSpace) {
			t.Fatalf("a put on a full disk: %v, want %v", err, rpctypes.ErrNoSpace)
		}
		select {
		case <-m.exitedc():
			t.Fatal("the member exited on a full disk")
		case <-time.After(diskCheck):
		}
	}

	// Space freed, the alarm disarmed: writes go on.
	for _, f := range []string{"filler", "filler2"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "the member to see the space freed", func() bool {
		return m.logLine("disk space is back") != ""
	})
	if _, err := cli.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: raised.MemberID, Alarm: raised.Alarm}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "after", "x"); err != nil {
		t.Fatalf("a put once space is freed and the alarm disarmed: %v", err)
	}

	m.kill()
	c.start(m)
	c.waitUp(m, 30*time.Second)
	resp, err := cli.Get(ctx, "", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	if len(keys) != 51 || !strings.Contains(strings.Join(keys, " "), "after") {
		t.Fatalf("after a restart: keys %v, want k00..k49 and after", keys)
	}
}

// diskCheck is longer than the member's interval between looks at its
// free space.
const diskCheck = 1500 * time.Millisecond

// fill writes zeros to path until it holds n bytes or the disk is full.
func fill(t *testing.T, path string, n int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for written := int64(0); written < n; {
		k, err := f.Write(buf[:min(int64(len(buf)), n-written)])
		written += int64(k)
		if errors.Is(err, syscall.ENOSPC) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// waitFor polls cond until it holds, failing the test after within.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition
	}
}
