package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSurvivorLogNamesLostPeers: when two peers die, the survivor's log
// says which, with etcd's messages (operators grep for them).
func TestSurvivorLogNamesLostPeers(t *testing.T) {
	ms := newCluster(t, 3, clusterOptions{})
	cli := client(t, ms[0])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, m := range list.Members {
		ids[m.Name] = fmt.Sprintf("%x", m.ID)
	}
	for _, m := range ms[1:] {
		if !strings.Contains(ms[0].log(), `"peer became active" peer-id=`+ids[m.name]) {
			t.Errorf("no 'peer became active' line for %s (%s)", m.name, ids[m.name])
		}
	}
	ms[1].kill()
	ms[2].kill()
	waitFor(t, 10*time.Second, "lost-peer lines naming both peers", func() bool {
		log := ms[0].log()
		return strings.Contains(log, "lost TCP streaming connection with remote peer") &&
			strings.Contains(log, "remote-peer-id="+ids[ms[1].name]) && strings.Contains(log, "remote-peer-id="+ids[ms[2].name])
	})
}
