package snapfmt

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestMarshalV2StoreAsEtcd rebuilds the v2 store of two snapshots real etcd
// 3.7.3 wrote, byte for byte.
func TestMarshalV2StoreAsEtcd(t *testing.T) {
	fixture, err := Unmarshal(readFile(t, fixtureSnap))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		m    V2Membership
		want []byte
	}{
		{"one member", V2Membership{
			Members:        []V2Member{{ID: fixtureNodeID, PeerURLs: []string{"http://127.0.0.1:42380"}, Name: "m1", ClientURLs: []string{"http://127.0.0.1:42379"}}},
			ClusterVersion: "3.7.0",
		}, fixture.GetData()},
		{"a removed member", V2Membership{
			Members:        []V2Member{{ID: 0xddd67b312462fd7b, PeerURLs: []string{"http://127.0.0.1:12380"}, Name: "s1", ClientURLs: []string{"http://127.0.0.1:12379"}}},
			Removed:        []uint64{0xdeae475d7c8d3892},
			ClusterVersion: "3.7.0",
		}, readFile(t, "testdata/v2store.json")},
	} {
		got, err := MarshalV2Store(c.m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, c.want) {
			n := firstDifference(got, c.want)
			t.Errorf("%s: differs at byte %d:\n got %.200s\nwant %.200s", c.name, n, got[n:], c.want[n:])
		}
	}
}

func firstDifference(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestMarshalV2StoreLearnerWithoutAttributes: a learner that has not
// published yet has its raftAttributes only, marked as a learner.
func TestMarshalV2StoreLearnerWithoutAttributes(t *testing.T) {
	b, err := MarshalV2Store(V2Membership{Members: []V2Member{{ID: 0xa, PeerURLs: []string{"http://l:1"}, IsLearner: true}}})
	if err != nil {
		t.Fatal(err)
	}
	var st v2Store
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	member := st.Root.Children["0"].Children["members"].Children["a"]
	if len(member.Children) != 1 || member.Children["raftAttributes"].Value != `{"peerURLs":["http://l:1"],"isLearner":true}` {
		t.Errorf("learner node: %+v", member.Children)
	}
	if _, ok := st.Root.Children["0"].Children["version"]; ok || st.CurrentIndex != 1 {
		t.Errorf("no cluster version given: version node %v, current index %d", st.Root.Children["0"].Children["version"], st.CurrentIndex)
	}
}

// TestMarshalV2StoreEventRingWraps keeps the last 1000 events.
func TestMarshalV2StoreEventRingWraps(t *testing.T) {
	var m V2Membership
	for id := uint64(1); id <= 1200; id++ {
		m.Removed = append(m.Removed, id)
	}
	b, err := MarshalV2Store(m)
	if err != nil {
		t.Fatal(err)
	}
	var st v2Store
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	h := st.WatcherHub.EventHistory
	if h.Queue.Size != 1000 || h.StartIndex != 201 || h.LastIndex != 1200 || h.Queue.Front != h.Queue.Back {
		t.Errorf("history: size %d, indexes %d..%d, front %d, back %d", h.Queue.Size, h.StartIndex, h.LastIndex, h.Queue.Front, h.Queue.Back)
	}
	if oldest := h.Queue.Events[h.Queue.Front]; oldest.Node.CreatedIndex != 201 {
		t.Errorf("oldest event at index %d, want 201", oldest.Node.CreatedIndex)
	}
}
