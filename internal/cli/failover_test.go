package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client/clienttest"
)

// TestWatchAndKeepAliveCommandsSurviveMemberKills runs `cairn watch
// --prefix` and `cairn lease keep-alive` against a 3-member cluster and
// kills each member in turn with SIGKILL while writes go on, so that both
// lose the member they are connected to. The watch must print every
// revision exactly once; the lease must stay alive.
func TestWatchAndKeepAliveCommandsSurviveMemberKills(t *testing.T) {
	for _, server := range clienttest.Servers(t) {
		t.Run(server.Name, func(t *testing.T) { watchAndKeepAliveCommandsSurviveMemberKills(t, server.Command) })
	}
}

func watchAndKeepAliveCommandsSurviveMemberKills(t *testing.T, server []string) {
	cairn := clienttest.CairnBinary(t)
	cluster := clienttest.StartCluster(t, clienttest.Options{Size: 3, Server: server})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	writer := clusterClient(t, cluster)

	lease, err := writer.Lease.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 5})
	if err != nil {
		t.Fatal(err)
	}
	first, err := writer.KV.Put(ctx, &pb.PutRequest{Key: []byte("f/first")})
	if err != nil {
		t.Fatal(err)
	}
	endpoints := endpointsFlag(cluster)
	var watchOut, keepAliveOut syncBuffer
	watch := startCommand(t, cairn, &watchOut, endpoints, "-w", "json", "watch", "f/", "--prefix",
		"--rev", fmt.Sprint(first.Header.Revision))
	keepAlive := startCommand(t, cairn, &keepAliveOut, endpoints, "lease", "keep-alive", fmt.Sprintf("%x", lease.ID))

	var last int64
	for _, m := range cluster.Members {
		m.Kill()
		for i := range 5 {
			key := fmt.Sprintf("f/%s-%d", m.Name, i)
			// A write cut short by the loss of the leader has an unknown
			// outcome: write again; every revision is watched all the same.
			clienttest.Poll(t, 30*time.Second, "put "+key, func() bool {
				resp, err := writer.KV.Put(ctx, &pb.PutRequest{Key: []byte(key)})
				if err == nil {
					last = resp.Header.Revision
				}
				return err == nil
			})
		}
		cluster.Restart(m)
		cluster.WaitHealthy(m)
	}

	clienttest.Poll(t, 30*time.Second, "the watch to print revision "+fmt.Sprint(last), func() bool {
		return strings.Contains(watchOut.String(), fmt.Sprintf(`"mod_revision":%d,`, last))
	})
	stop(t, watch)
	stop(t, keepAlive)

	seen := map[int64]int{}
	for line := range strings.Lines(watchOut.String()) {
		var resp struct {
			Events []struct {
				Kv struct {
					ModRevision int64 `json:"mod_revision"`
				} `json:"kv"`
			}
		}
		if err := json.Unmarshal([]byte(line), &resp); err != nil {
			t.Fatalf("watch printed %q: %v", line, err)
		}
		for _, ev := range resp.Events {
			seen[ev.Kv.ModRevision]++
		}
	}
	for rev := first.Header.Revision; rev <= last; rev++ {
		if seen[rev] != 1 {
			t.Errorf("revision %d printed %d times, want once", rev, seen[rev])
		}
	}

	ttl, err := writer.Lease.LeaseTimeToLive(ctx, &pb.LeaseTimeToLiveRequest{ID: lease.ID})
	if err != nil {
		t.Fatal(err)
	}
	if ttl.TTL <= 0 {
		t.Errorf("lease expired while kept alive across member kills; keep-alive printed:\n%s", keepAliveOut.String())
	}
}
