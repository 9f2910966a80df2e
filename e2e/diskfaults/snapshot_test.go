package diskfaults

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/faultfs"
	"github.com/cairnkv/cairn/pkg/writebehind"
)

// TestReceivedSnapshotSyncedAsItComes: a member too far behind for the
// leader's raft log receives the leader's db, and syncs it every
// writebehind.DefaultInterval bytes as it comes, not once at its end: on a
// disk it shares with a WAL, the WAL's fsyncs then wait for little of it.
func TestReceivedSnapshotSyncedAsItComes(t *testing.T) {
	c := startClusterOn(t, cairnBin, 3, "--snapshot-count", "20", "--snapshot-catchup-entries", "5")
	lead := c.leader()
	var behind *member
	var mount *faultfs.FS
	for i, m := range c.members {
		if m != lead {
			behind, mount = m, c.mounts[i]
			break
		}
	}
	behind.kill()
	cli := c.client(lead)
	const syncs = 4
	value := string(bytes.Repeat([]byte("v"), 64<<10))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range (syncs + 1) * writebehind.DefaultInterval / len(value) {
		if _, err := cli.Put(ctx, fmt.Sprintf("k%d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	// A delay of nothing to speak of, so that the fsyncs of the db being
	// received are counted.
	mount.Set(faultfs.Faults{FsyncDelay: time.Microsecond, Only: func(p string) bool { return strings.HasSuffix(p, ".snap.db.tmp") }})
	c.start(behind)
	waitFor(t, 30*time.Second, "the snapshot to be received", func() bool { return behind.logLine("received snapshot") != "" })
	if got := mount.Stats().DelayedFsyncs; got < syncs {
		t.Errorf("the db received with %d fsyncs, want at least %d (one every %d bytes): %s",
			got, syncs, writebehind.DefaultInterval, behind.logLine("received snapshot"))
	}
	c.waitUp(behind, 30*time.Second)
}
