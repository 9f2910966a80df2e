package cluster

import (
	"slices"
	"strings"
	"testing"
)

func TestIDsAreDeterministic(t *testing.T) {
	a := MemberID([]string{"http://b:2380", "http://a:2380"}, "tok", 0)
	b := MemberID([]string{"http://a:2380", "http://b:2380"}, "tok", 0)
	if a != b || a == MemberID([]string{"http://a:2380", "http://b:2380"}, "other", 0) {
		t.Error("member IDs must depend on the sorted peer URLs and the token only")
	}
	if ID([]uint64{3, 1, 2}) != ID([]uint64{1, 2, 3}) {
		t.Error("cluster IDs must not depend on member order")
	}
}

func TestParseInitial(t *testing.T) {
	got, err := ParseInitial("b=http://h:2,a=http://h:1, b=http://h:0")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !slices.Equal(got["a"], []string{"http://h:1"}) || !slices.Equal(got["b"], []string{"http://h:0", "http://h:2"}) {
		t.Errorf("ParseInitial = %v", got)
	}
	for s, want := range map[string]string{
		"":                          "is empty",
		"a":                         "is not name=url",
		"a=ftp://h:1":               "scheme must be http, https, unix or unixs",
		"a=http://h:1,b=http://h:1": "twice",
		"a=http://":                 "has no host",
	} {
		if _, err := ParseInitial(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseInitial(%q): %v, want an error saying %q", s, err, want)
		}
	}
}

// TestCheckURLTakesUnixSocketPaths: a unix URL names its socket by its
// host or, as etcd also takes it, by its path; one with neither is refused.
func TestCheckURLTakesUnixSocketPaths(t *testing.T) {
	for _, u := range []string{"unix://localhost:2379", "unix:///run/etcd.sock", "unixs:///run/etcd.sock", "http://127.0.0.1:2379"} {
		if err := CheckURL(u); err != nil {
			t.Errorf("CheckURL(%q): %v", u, err)
		}
	}
	for _, u := range []string{"unix://", "http://", "ftp://127.0.0.1:21"} {
		if err := CheckURL(u); err == nil {
			t.Errorf("CheckURL(%q) accepted", u)
		}
	}
}
