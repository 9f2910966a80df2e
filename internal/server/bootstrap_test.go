package server

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"go.etcd.io/raft/v3"
	"google.golang.org/protobuf/proto"
)

// bootstrapEntries returns the bytes of the entries raft writes when it
// bootstraps a new cluster from peers, the first a member persists.
func bootstrapEntries(t *testing.T, peers []raft.Peer) [][]byte {
	t.Helper()
	rn, err := raft.NewRawNode(&raft.Config{ID: peers[0].ID, ElectionTick: 10, HeartbeatTick: 1,
		Storage: raft.NewMemoryStorage(), MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := rn.Bootstrap(peers); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, e := range rn.Ready().Entries {
		b, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestBootstrapEntriesAreTheSameOnEveryMember: every member of a new
// cluster writes its conf change entries 1..N itself, at term 1; raft's log
// matching takes them to be equal everywhere (a member never compares
// them), so they must be the same bytes on each, whatever the order of
// --initial-cluster or of Go's map iteration, and in etcd's order: by
// member ID. Map order is random, hence many rounds.
func TestBootstrapEntriesAreTheSameOnEveryMember(t *testing.T) {
	for _, n := range []int{3, 5} {
		var parts []string
		for i := 1; i <= n; i++ {
			parts = append(parts, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, 2380+i))
		}
		initial := strings.Join(parts, ",")
		members, peers, err := initialPeers(initial, "etcd-cluster")
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(members); i++ {
			if members[i-1].ID >= members[i].ID || peers[i-1].ID >= peers[i].ID {
				t.Fatalf("%d members: not by ID: %v", n, members)
			}
		}
		want := bootstrapEntries(t, peers)
		if len(want) != n {
			t.Fatalf("%d members: %d bootstrap entries", n, len(want))
		}
		for round := range 50 {
			_, peers, err := initialPeers(initial, "etcd-cluster")
			if err != nil {
				t.Fatal(err)
			}
			got := bootstrapEntries(t, peers)
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("%d members, round %d: entry %d differs", n, round, i+1)
				}
			}
		}
	}
}

// TestBootstrapEntriesInEtcdsOrder pins what etcd 3.7.3 wrote at indexes
// 1..3 of a new 3-member cluster (read with dump-logs from the WAL of each
// of its members): the members by ID, each with its JSON as the context.
func TestBootstrapEntriesInEtcdsOrder(t *testing.T) {
	_, peers, err := initialPeers("c1=http://127.0.0.1:33381,c2=http://127.0.0.1:33382,c3=http://127.0.0.1:33383", "etcd-cluster")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id      uint64
		context string
	}{
		{0x5cf13fdd1207167c, `{"id":6697204339599414908,"peerURLs":["http://127.0.0.1:33383"],"name":"c3"}`},
		{0xb00abe8e230a35bd, `{"id":12685160818124928445,"peerURLs":["http://127.0.0.1:33382"],"name":"c2"}`},
		{0xbb91926054364afa, `{"id":13515744899142929146,"peerURLs":["http://127.0.0.1:33381"],"name":"c1"}`},
	}
	if len(peers) != len(want) {
		t.Fatalf("%d peers, want %d", len(peers), len(want))
	}
	for i, w := range want {
		if peers[i].ID != w.id || string(peers[i].Context) != w.context {
			t.Errorf("peer %d: %x %s, want %x %s", i+1, peers[i].ID, peers[i].Context, w.id, w.context)
		}
	}
}
