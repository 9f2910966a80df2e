//go:build failpoints

package crashpoints

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// checkResult is what one check of the cluster found.
type checkResult struct {
	rev      int64 // the revision every member was read and hashed at
	checked  int   // acknowledged puts looked for on each member
	lost     int   // acknowledged puts missing or wrong, summed over the members
	phantoms int   // keys that were never put, or with a value never written
	hashes   []string
	problems []string // one line each, the first few
}

func (r *checkResult) problem(format string, args ...any) {
	if len(r.problems) < 12 {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	}
}

func (r *checkResult) hashesAgree() bool {
	for _, h := range r.hashes {
		if h != r.hashes[0] {
			return false
		}
	}
	return len(r.hashes) > 0
}

func (r *checkResult) ok() bool {
	return r.lost == 0 && r.phantoms == 0 && r.hashesAgree() && len(r.problems) == 0
}

// check waits until every member has reached the highest acknowledged
// revision R, then reads the load's keys on each member at R (serializable:
// the member's own store) and looks for every acknowledged put, and compares
// the members' HashKV at R.
func (c *cluster) check(l *load) checkResult {
	acked, rev, tried := l.snapshot()
	res := checkResult{rev: rev, checked: len(acked)}
	for _, m := range c.members {
		h, err := checkMember(m, rev, acked, tried, &res)
		if err != nil {
			res.problem("%s: %v", m.name, err)
			h = "error"
		}
		res.hashes = append(res.hashes, h)
	}
	if !res.hashesAgree() {
		res.problem("HashKV at revision %d differs: %s", rev, strings.Join(res.hashes, " "))
	}
	return res
}

func checkMember(m *member, rev int64, acked map[string]int64, tried [writers + 1]int64, res *checkResult) (string, error) {
	cli, err := m.client()
	if err != nil {
		return "", err
	}
	defer cli.Close()
	// Wait until the member has applied up to rev.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := cli.Get(ctx, "nothing", clientv3.WithSerializable())
		cancel()
		if err == nil && resp.Header.Revision >= rev {
			break
		}
		if time.Now().After(deadline) {
			got := int64(-1)
			if err == nil {
				got = resp.Header.Revision
			}
			return "", fmt.Errorf("revision %d not reached within 60s (at %d, err %v)", rev, got, err)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, keyPrefix, clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithSerializable())
	if err != nil {
		return "", fmt.Errorf("range at %d: %w", rev, err)
	}
	got := make(map[string]int64, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		k := string(kv.Key)
		got[k] = kv.ModRevision
		w, seq, ok := parseLoadKey(k)
		if !ok || seq < 1 || seq > tried[w] || string(kv.Value) != loadValue(k) {
			res.phantoms++
			res.problem("%s: key %q = %q was never put", m.name, k, kv.Value)
		}
	}
	var missing []string
	for k, r := range acked {
		mr, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case mr != r:
			res.lost++
			res.problem("%s: key %q at revision %d, its put was acknowledged at %d", m.name, k, mr, r)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		res.lost += len(missing)
		res.problem("%s: %d acknowledged puts missing at revision %d, e.g. %v (acked at %d)", m.name, len(missing), rev,
			missing[:min(5, len(missing))], acked[missing[0]])
	}
	hctx, hcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer hcancel()
	h, err := cli.HashKV(hctx, m.curl, rev)
	if err != nil {
		return "", fmt.Errorf("hashkv at %d: %w", rev, err)
	}
	return fmt.Sprintf("%08x/c%d", h.Hash, h.CompactRevision), nil
}
