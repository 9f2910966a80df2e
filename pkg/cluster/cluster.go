// Package cluster holds etcd's rules for a cluster's identity, which a
// member at its start and an offline restore apply alike: the syntax of
// --initial-cluster, the URLs a member may have, and the member and cluster
// IDs derived from them; the records of the members and cluster buckets
// that are about the cluster (Member, DowngradeInfo); and the rules of the
// strict reconfiguration check. It imports nothing of internal/, nor
// pkg/store.
package cluster

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// MemberID derives a member's ID from its peer URLs and the cluster token
// (and, for a member added at runtime, the time it was added), as etcd does:
// the first 8 bytes of a SHA-1.
func MemberID(peerURLs []string, token string, addedAtUnix int64) uint64 {
	urls := append([]string(nil), peerURLs...)
	sort.Strings(urls)
	b := []byte(strings.Join(urls, ""))
	b = append(b, token...)
	if addedAtUnix != 0 {
		b = append(b, strconv.FormatInt(addedAtUnix, 10)...)
	}
	sum := sha1.Sum(b)
	return binary.BigEndian.Uint64(sum[:8])
}

// ID derives the cluster's ID from its initial members' IDs.
func ID(memberIDs []uint64) uint64 {
	ids := append([]uint64(nil), memberIDs...)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	b := make([]byte, 0, 8*len(ids))
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, id)
	}
	sum := sha1.Sum(b)
	return binary.BigEndian.Uint64(sum[:8])
}

// CheckURL reports whether s is a URL a member can listen on or advertise.
func CheckURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("bad URL %q: %w", s, err)
	}
	switch u.Scheme {
	case "http", "https", "unix", "unixs":
	default:
		return fmt.Errorf("URL %q: scheme must be http, https, unix or unixs", s)
	}
	unix := u.Scheme == "unix" || u.Scheme == "unixs"
	if u.Host == "" && !(unix && u.Path != "") { // a unix socket may be named by its path: unix:///run/etcd.sock
		return fmt.Errorf("URL %q has no host", s)
	}
	return nil
}

// ParseInitial parses "name=url,name=url" into name → peer URLs,
// sorted; a name may appear more than once, for a member with several peer
// URLs, but a URL only once.
func ParseInitial(s string) (map[string][]string, error) {
	out := map[string][]string{}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, u, ok := strings.Cut(part, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--initial-cluster: %q is not name=url", part)
		}
		if err := CheckURL(u); err != nil {
			return nil, fmt.Errorf("--initial-cluster: %w", err)
		}
		if seen[u] {
			return nil, fmt.Errorf("--initial-cluster %s has the URL %s twice", s, u)
		}
		seen[u] = true
		out[name] = append(out[name], u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--initial-cluster is empty")
	}
	for _, urls := range out {
		sort.Strings(urls)
	}
	return out, nil
}

// SameURLs reports whether a and b hold the same URLs, in any order.
func SameURLs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(x)
	sort.Strings(y)
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}
