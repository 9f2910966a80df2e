package cluster

import "testing"

// TestRecordsAreEtcds: members and downgrade records encode as etcd 3.7.3
// writes them.
func TestRecordsAreEtcds(t *testing.T) {
	m := Member{ID: 0x1f4d227d440d78c2, Name: "m1", PeerURLs: []string{"http://127.0.0.1:42380"}, ClientURLs: []string{"http://127.0.0.1:42379"}}
	want := `{"id":2255496909790476482,"peerURLs":["http://127.0.0.1:42380"],"name":"m1","clientURLs":["http://127.0.0.1:42379"]}`
	if got := string(m.Marshal()); got != want {
		t.Errorf("member JSON %s, want etcd's %s", got, want)
	}
	if string(MemberKey(0x09443329ec7158d9)) != "9443329ec7158d9" {
		t.Errorf("member key %s: etcd writes IDs without leading zeros", MemberKey(0x09443329ec7158d9))
	}
	if id, err := ParseMemberKey([]byte("9443329ec7158d9")); err != nil || id != 0x09443329ec7158d9 {
		t.Errorf("ParseMemberKey = %x, %v", id, err)
	}
	// The downgrade values etcd 3.7.3 wrote on enable and on cancel.
	for _, want := range []string{`{"target-version":"3.6.0","enabled":true}`, `{"target-version":"","enabled":false}`} {
		d, err := UnmarshalDowngrade([]byte(want))
		if err != nil {
			t.Error(err)
		}
		if got := string(d.Marshal()); got != want {
			t.Errorf("downgrade JSON %s, want etcd's %s", got, want)
		}
	}
}
