package forensics

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/pkg/cluster"
)

// restoreCluster is the membership a restored data directory starts with:
// the members of --initial-cluster with the IDs etcd derives from their
// peer URLs and the cluster token, so that every member restored from the
// same flags, by cairn or by etcdutl, agrees on them.
type restoreCluster struct {
	members []cluster.Member // by ID
	self    cluster.Member
	id      uint64
}

// newRestoreCluster checks the cluster flags and derives the IDs.
func newRestoreCluster(name, initialCluster, token, advertisePeerURLs string) (*restoreCluster, error) {
	urlsByName, err := cluster.ParseInitial(initialCluster)
	if err != nil {
		return nil, cmderr.BadArgs("%v", err)
	}
	own, ok := urlsByName[name]
	if !ok {
		return nil, cmderr.BadArgs("couldn't find local name %q in the initial cluster configuration", name)
	}
	adv, err := parseURLs(advertisePeerURLs)
	if err != nil {
		return nil, cmderr.BadArgs("--initial-advertise-peer-urls: %v", err)
	}
	if !slices.Equal(adv, own) {
		return nil, cmderr.BadArgs("--initial-cluster has %s=%s but missing from --initial-advertise-peer-urls=%s",
			name, strings.Join(own, ","), strings.Join(adv, ","))
	}
	c := &restoreCluster{}
	for n, urls := range urlsByName {
		m := cluster.Member{ID: cluster.MemberID(urls, token, 0), Name: n, PeerURLs: urls}
		c.members = append(c.members, m)
		if n == name {
			c.self = m
		}
	}
	slices.SortFunc(c.members, func(a, b cluster.Member) int { return cmp.Compare(a.ID, b.ID) })
	ids := make([]uint64, len(c.members))
	for i, m := range c.members {
		ids[i] = m.ID
	}
	c.id = cluster.ID(ids)
	return c, nil
}

// parseURLs parses a comma-separated list of peer URLs, sorted.
func parseURLs(s string) ([]string, error) {
	var out []string
	for raw := range strings.SplitSeq(s, ",") {
		if raw = strings.TrimSpace(raw); raw == "" {
			continue
		}
		u, err := checkPeerURL(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	slices.Sort(out)
	return out, nil
}

// checkPeerURL accepts the URL schemes etcd accepts for peers.
func checkPeerURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("bad URL %q: %w", raw, err)
	}
	switch u.Scheme {
	case "http", "https", "unix", "unixs":
	default:
		return "", fmt.Errorf("URL %q: scheme must be http, https, unix, or unixs", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("URL %q has no host", raw)
	}
	return raw, nil
}
