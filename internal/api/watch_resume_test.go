package api

import (
	"context"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/memberconfig"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestWatchFutureStartSurvivesRestart: a clientv3 watch that starts beyond
// the member's revision, on a member that is restarted before it gets
// there (its store replaced, as by a snapshot from the leader), resumes at
// its start revision and gets its first event there, though progress was
// asked for while the member was behind. clientv3 resumes a watch after
// the revision of its last progress notification: one sent below the
// start revision made it resume, and deliver events, below it.
func TestWatchFutureStartSurvivesRestart(t *testing.T) {
	m := newMember(t, memberconfig.Config{})
	cli := m.client("", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rev int64
	for range 3 {
		resp, err := cli.Put(ctx, "k", "v")
		if err != nil {
			t.Fatal(err)
		}
		rev = resp.Header.Revision
	}
	start := rev + 10
	wch := cli.Watch(ctx, "k", clientv3.WithRev(start))
	// A watcher of m on the same stream, created after the one of k:
	// clientv3 sends one creation at a time.
	mch := cli.Watch(ctx, "m", clientv3.WithCreatedNotify())
	if resp := <-mch; !resp.Created {
		t.Fatalf("watch of m: %+v", resp)
	}
	if err := cli.RequestProgress(ctx); err != nil {
		t.Fatal(err)
	}
	// The event of a write on m comes after any answer to the request.
	if _, err := cli.Put(ctx, "m", "v"); err != nil {
		t.Fatal(err)
	}
	for resp := range mch {
		if len(resp.Events) > 0 {
			break
		}
	}

	m.stop()
	m.start()
	for {
		resp, err := cli.Put(ctx, "k", "v")
		if err != nil {
			t.Fatal(err)
		}
		if resp.Header.Revision >= start+2 {
			break
		}
	}
	for resp := range wch {
		if err := resp.Err(); err != nil {
			t.Fatal(err)
		}
		if len(resp.Events) > 0 {
			if got := resp.Events[0].Kv.ModRevision; got != start {
				t.Fatalf("first event at %d, want the start revision %d", got, start)
			}
			return
		}
	}
	t.Fatal("the watch ended with no event")
}
