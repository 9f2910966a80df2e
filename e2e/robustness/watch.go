package robustness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// event is one watch event, as the final history records it too.
type event struct {
	Rev    int64  `json:"rev"`
	Delete bool   `json:"delete,omitempty"`
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Lease  int64  `json:"lease,omitempty"`
}

func (e event) String() string {
	if e.Delete {
		return fmt.Sprintf("%d:delete(%s)", e.Rev, e.Key)
	}
	return fmt.Sprintf("%d:put(%s=%s)", e.Rev, e.Key, e.Value)
}

// watchResp is one response a watcher received.
type watchResp struct {
	At     int64   `json:"at"` // ns since the run started
	Events []event `json:"events"`
}

// watchErr is the end of one watch stream.
type watchErr struct {
	At       int64  `json:"at"`
	Err      string `json:"err"`
	NoLeader bool   `json:"no_leader,omitempty"`
	// Compacted is the compact revision of a watch cancelled because it
	// asked for compacted revisions; the watcher goes on from there.
	Compacted int64 `json:"compacted,omitempty"`
	// Before is the number of responses received before the end.
	Before int `json:"before"`
}

// watcher keeps one prefix watch open on one member from revision 1, and
// after each end of its stream watches again from the revision after the
// last it received, or, cancelled because that revision is compacted, from
// the compact revision.
type watcher struct {
	Name          string      `json:"name"`
	Member        string      `json:"member"`
	RequireLeader bool        `json:"require_leader"`
	Resps         []watchResp `json:"responses"`
	Ends          []watchErr  `json:"ends"`
	// Retired is set when its member left the cluster: it is not expected
	// to reach the final revision.
	Retired bool `json:"retired,omitempty"`

	mu   sync.Mutex
	last int64 // the last revision received
	from int64 // where the next watch starts
}

func (w *watcher) lastRev() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// run watches until ctx ends.
func (w *watcher) run(ctx context.Context, cli *clientv3.Client, h *history) {
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(ctx)
		if w.RequireLeader {
			wctx = clientv3.WithRequireLeader(wctx)
		}
		w.mu.Lock()
		from := max(w.last+1, w.from)
		w.mu.Unlock()
		ch := cli.Watch(wctx, keyPrefix, clientv3.WithPrefix(), clientv3.WithRev(from))
		var end error
		var compacted int64
		for resp := range ch {
			if resp.CompactRevision != 0 {
				compacted = resp.CompactRevision
			}
			if err := resp.Err(); err != nil {
				end = err
				break
			}
			if resp.Canceled {
				end = fmt.Errorf("watch canceled: %s", resp.CancelReason)
				break
			}
			if len(resp.Events) == 0 {
				continue // a progress notification
			}
			r := watchResp{At: h.now()}
			for _, e := range resp.Events {
				ev := event{Rev: e.Kv.ModRevision, Key: string(e.Kv.Key), Delete: e.Type == clientv3.EventTypeDelete}
				if !ev.Delete {
					ev.Value, ev.Lease = string(e.Kv.Value), e.Kv.Lease
				}
				r.Events = append(r.Events, ev)
			}
			w.mu.Lock()
			w.Resps = append(w.Resps, r)
			w.last = max(w.last, r.Events[len(r.Events)-1].Rev)
			w.mu.Unlock()
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		if end == nil {
			end = errors.New("watch channel closed")
		}
		w.mu.Lock()
		w.Ends = append(w.Ends, watchErr{At: h.now(), Err: end.Error(), Compacted: compacted, Before: len(w.Resps),
			NoLeader: errors.Is(end, rpctypes.ErrNoLeader) || strings.Contains(end.Error(), rpctypes.ErrNoLeader.Error())})
		w.from = max(w.from, compacted)
		w.mu.Unlock()
		select { // back off before watching again
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// noLeaderBetween reports whether the watch ended with "no leader" in
// [from, to] (ns since the start of the run).
func (w *watcher) noLeaderBetween(from, to int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.Ends {
		if e.NoLeader && e.At >= from && e.At <= to {
			return true
		}
	}
	return false
}

func (w *watcher) compactedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, e := range w.Ends {
		if e.Compacted != 0 {
			n++
		}
	}
	return n
}

func (w *watcher) noLeaderCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, e := range w.Ends {
		if e.NoLeader {
			n++
		}
	}
	return n
}

// checkWatch compares what w received with the final history (events by
// revision, every revision from 2 to final): revisions strictly increasing
// from one response to the next, each revision's events all in one
// response and equal to the history's, no revision missing between the
// first and the last received unless a compaction cancelled the watch in
// between and the missing revisions are all below its compact revision,
// and the last one final.
func checkWatch(w *watcher, final map[int64][]event, finalRev int64) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var bad []string
	report := func(format string, args ...any) {
		if len(bad) < 20 {
			bad = append(bad, fmt.Sprintf("watcher %s: ", w.Name)+fmt.Sprintf(format, args...))
		}
	}
	var prev int64 = 1                 // watching from revision 1: the first write is revision 2
	compactedBefore := map[int]int64{} // response → the highest compact revision of the ends just before it
	for _, e := range w.Ends {
		compactedBefore[e.Before] = max(compactedBefore[e.Before], e.Compacted)
	}
	for i, r := range w.Resps {
		byRev := map[int64][]event{}
		var order []int64
		for _, e := range r.Events {
			if len(byRev[e.Rev]) == 0 {
				order = append(order, e.Rev)
			}
			byRev[e.Rev] = append(byRev[e.Rev], e)
		}
		for j, rev := range order {
			switch {
			case rev <= prev:
				report("response %d: revision %d after %d (duplicate or out of order)", i, rev, prev)
			case rev > prev+1 && (j > 0 || rev > compactedBefore[i]):
				report("response %d: revisions %d..%d missing (got %d after %d)", i, prev+1, rev-1, rev, prev)
			}
			if j > 0 && rev < order[j-1] {
				report("response %d: revision %d after %d within one response", i, rev, order[j-1])
			}
			want := final[rev]
			if got := byRev[rev]; !equalEvents(got, want) {
				report("revision %d: got %v, the final history has %v", rev, got, want)
			}
			prev = max(prev, rev)
		}
	}
	if prev < finalRev && !w.Retired {
		report("received up to revision %d, the final revision is %d", prev, finalRev)
	}
	return bad
}

func equalEvents(a, b []event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
