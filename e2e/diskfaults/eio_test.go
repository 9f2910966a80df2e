//go:build linux

package diskfaults

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/faultfs"
)

// TestFsyncEIOFailStops: the leader's fsyncs fail with EIO. It must not
// acknowledge the write it could not make durable, must stop with a log
// line naming the error, and, once the disk works, restart clean with
// every acknowledged write.
func TestFsyncEIOFailStops(t *testing.T) {
	for _, srv := range []string{"cairn", "etcd"} {
		t.Run(srv, func(t *testing.T) {
			c := startCluster(t, binaries(t)[srv](t))
			lead := c.leader()
			cli := c.client(lead)
			var acked []string
			for i := range 5 {
				k := fmt.Sprintf("before-%d", i)
				if _, err := cli.Put(context.Background(), k, "v"); err != nil {
					t.Fatal(err)
				}
				acked = append(acked, k)
			}
			c.fs.Set(faultfs.Faults{FsyncErr: syscall.EIO, Only: c.onMember(lead)})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := cli.Put(ctx, "during", "v")
			cancel()
			if err == nil {
				t.Fatalf("%s acknowledged a put while its fsyncs failed with EIO", lead.name)
			}
			select {
			case <-lead.exitedc():
			case <-time.After(10 * time.Second):
				t.Fatalf("%s still runs 10 s after its fsync failed with EIO", lead.name)
			}
			line := lead.logLine("input/output error")
			if line == "" {
				t.Errorf("%s's log does not name the I/O error it stopped on", lead.name)
			}
			if srv == "cairn" && !strings.Contains(line, lead.dataDir) {
				t.Errorf("%s's log line does not name the file that failed", lead.name)
			}
			t.Logf("%s stopped: %.400s", lead.name, line)
			c.fs.Set(faultfs.Faults{})
			c.start(lead)
			c.waitUp(lead, 30*time.Second)
			for _, k := range acked {
				resp, err := c.client(lead).Get(context.Background(), k)
				if err != nil {
					t.Fatal(err)
				}
				if len(resp.Kvs) != 1 {
					t.Fatalf("acknowledged key %s lost after %s restarted", k, lead.name)
				}
			}
		})
	}
}
