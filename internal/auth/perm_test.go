package auth

import (
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"
)

func TestRangeSetMergesOverlappingAndAdjacent(t *testing.T) {
	s := newRangeSet([]interval{
		{begin: []byte("c"), end: []byte("e")},
		{begin: []byte("a"), end: []byte("b")},
		{begin: []byte("b"), end: []byte("c")}, // touches both neighbours
		{begin: []byte("x")},                   // unbounded
		{begin: []byte("y"), end: []byte("z")}, // inside the unbounded one
	})
	if len(s) != 2 || string(s[0].begin) != "a" || string(s[0].end) != "e" || string(s[1].begin) != "x" || s[1].end != nil {
		t.Fatalf("merged to %q", s)
	}
	for _, c := range []struct {
		begin, end string
		unbounded  bool
		want       bool
	}{
		{"a", "e", false, true},
		{"a", "e\x00", false, false},
		{"b", "d", false, true},
		{"0", "b", false, false},
		{"e", "f", false, false},
		{"x", "", true, true},
		{"xa", "", true, true},
		{"w", "", true, false},
		{"d", "", true, false},
	} {
		var end []byte
		if !c.unbounded {
			end = []byte(c.end)
		}
		if got := s.containsRange([]byte(c.begin), end); got != c.want {
			t.Errorf("containsRange(%q, %q) = %v, want %v", c.begin, end, got, c.want)
		}
	}
	for key, want := range map[string]bool{"a": true, "d\xff": true, "e": false, "0": false, "x": true, "zzz": true, "w": false} {
		if got := s.containsKey([]byte(key)); got != want {
			t.Errorf("containsKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestUserPermsFollowEtcdsRangeForms(t *testing.T) {
	role := &authpb.Role{Name: []byte("r"), KeyPermission: []*authpb.Permission{
		{PermType: authpb.READWRITE, Key: []byte("/app/"), RangeEnd: []byte("/app0")}, // prefix /app/
		{PermType: authpb.READ, Key: []byte("ro")},                                    // one key
		{PermType: authpb.WRITE, Key: []byte("wf"), RangeEnd: []byte{0}},              // from key on
	}}
	p := newUserPerms([]*authpb.Role{role})
	for _, c := range []struct {
		typ       authpb.Permission_Type
		key, end  string
		permitted bool
	}{
		{authpb.READ, "/app/x", "", true},
		{authpb.WRITE, "/app/x", "", true},
		{authpb.READ, "/app/", "/app0", true},
		{authpb.READ, "/app/", "/app1", false},
		{authpb.READ, "/app", "", false},
		{authpb.READ, "ro", "", true},
		{authpb.WRITE, "ro", "", false},
		{authpb.READ, "ro", "ro\x00", true}, // the range of just "ro"
		{authpb.READ, "ro\x00", "", false},
		{authpb.WRITE, "wf", "", true},
		{authpb.WRITE, "wz/deep", "", true},
		{authpb.WRITE, "wf", "\x00", true},
		{authpb.WRITE, "we", "\x00", false},
		{authpb.READ, "wf", "", false},
		{authpb.READ, "\x00", "\x00", false},
		{authpb.READ, "/app/x", "/app/a", true}, // an empty range: judged by its start
	} {
		if got := p.allows(c.typ, []byte(c.key), []byte(c.end)); got != c.permitted {
			t.Errorf("%s %q..%q: allowed %v, want %v", c.typ, c.key, c.end, got, c.permitted)
		}
	}
}

func TestValidPermRange(t *testing.T) {
	for _, c := range []struct {
		key, end string
		valid    bool
	}{
		{"a", "", true}, {"a", "\x00", true}, {"a", "b", true},
		{"", "", false}, {"", "a", false}, {"b", "a", false}, {"a", "a", false},
	} {
		if got := validPermRange([]byte(c.key), []byte(c.end)); got != c.valid {
			t.Errorf("validPermRange(%q, %q) = %v", c.key, c.end, got)
		}
	}
}
