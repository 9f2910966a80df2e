package robustness

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// finalHistory is every revision of the run: what the compactor read
// before each compaction, then the rest, read with a watch at the end.
type finalHistory struct {
	Rev    int64             `json:"rev"` // the store's revision at the end
	Events map[int64][]event `json:"events"`
}

// readFinal reads the final revision with a linearizable get on m, then
// every event up to it that k has not read, with a watch from after k's
// last compaction.
func readFinal(c *cluster, m *member, k *compactor) (*finalHistory, error) {
	cli, err := c.client(m)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, keyPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return nil, fmt.Errorf("final revision from %s: %w", m.name, err)
	}
	events, read, _, _ := k.history()
	f := &finalHistory{Rev: resp.Header.Revision, Events: events}
	if err := readEvents(ctx, cli, max(read+1, 2), f.Rev, f.Events); err != nil {
		return nil, fmt.Errorf("final history from %s: %w", m.name, err)
	}
	return f, nil
}

// gaps lists the revisions in 2..Rev without events.
func (f *finalHistory) gaps() []int64 {
	var out []int64
	for r := int64(2); r <= f.Rev; r++ {
		if len(f.Events[r]) == 0 {
			out = append(out, r)
		}
	}
	return out
}

// replay returns the keys as the final history leaves them.
func (f *finalHistory) replay() map[string]kv {
	s := map[string]kv{}
	for _, r := range slices.Sorted(maps.Keys(f.Events)) {
		for _, e := range f.Events[r] {
			if e.Delete {
				delete(s, e.Key)
			} else {
				s[e.Key] = kv{e.Key, e.Value, e.Rev, e.Lease}
			}
		}
	}
	return s
}

// checkFinalState compares every member's keys (a serializable read at the
// final revision, once the member has applied it) with the replayed history.
func checkFinalState(c *cluster, f *finalHistory) []string {
	want := f.replay()
	var bad []string
	for _, m := range c.list() {
		got, err := readAt(c, m, f.Rev)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		if !maps.Equal(got, want) {
			bad = append(bad, fmt.Sprintf("%s at revision %d has %v, the history gives %v", m.name, f.Rev, got, want))
		}
	}
	return bad
}

// checkHashKV compares the HashKV of every member at rev: the hash of
// the revisions it keeps up to rev, and its compact revision.
func checkHashKV(c *cluster, rev int64) []string {
	cli, err := c.client(c.list()...)
	if err != nil {
		return []string{err.Error()}
	}
	defer cli.Close()
	var bad []string
	var ref *clientv3.HashKVResponse
	var refName string
	for _, m := range c.list() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := cli.HashKV(ctx, m.endpoint(), rev)
		cancel()
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: HashKV at %d: %v", m.name, rev, err))
		case ref == nil:
			ref, refName = resp, m.name
		case resp.Hash != ref.Hash || resp.CompactRevision != ref.CompactRevision:
			bad = append(bad, fmt.Sprintf("HashKV at %d: %s has hash %d (compact revision %d), %s has %d (%d)",
				rev, refName, ref.Hash, ref.CompactRevision, m.name, resp.Hash, resp.CompactRevision))
		}
	}
	return bad
}

func readAt(c *cluster, m *member, rev int64) (map[string]kv, error) {
	cli, err := c.client(m)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := cli.Get(ctx, keyPrefix, clientv3.WithPrefix(), clientv3.WithSerializable(), clientv3.WithRev(rev))
		cancel()
		if err == nil {
			out := map[string]kv{}
			for _, k := range resp.Kvs {
				out[string(k.Key)] = kv{string(k.Key), string(k.Value), k.ModRevision, k.Lease}
			}
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: serializable read at revision %d: %w", m.name, rev, err)
		}
		time.Sleep(100 * time.Millisecond) // polling until the member has applied rev
	}
}

// lostWrites lists the acknowledged writes that the final history does not
// hold at the revision they were acknowledged with.
func lostWrites(ops []op, f *finalHistory) []string {
	var lost []string
	for _, o := range ops {
		if o.Out.Unknown {
			continue
		}
		want := event{Rev: o.Out.Rev, Key: o.In.Key, Value: o.In.Value, Lease: o.In.Lease}
		switch {
		case o.In.Kind == opPut, o.In.Kind == opTxn && o.Out.Succeeded:
			if o.In.Kind == opTxn {
				want.Lease = 0
			}
		case o.In.Kind == opDelete && o.Out.Deleted == 1:
			want = event{Rev: o.Out.Rev, Key: o.In.Key, Delete: true}
		default:
			continue
		}
		if !slices.Contains(f.Events[o.Out.Rev], want) {
			lost = append(lost, fmt.Sprintf("worker %d (%s): %s acknowledged, revision %d of the final history is %v",
				o.Worker, o.Endpoint, describe(o.In, o.Out), o.Out.Rev, f.Events[o.Out.Rev]))
		}
	}
	return lost
}

// porcupineOps turns the history into porcupine's operations, with every
// operation of unknown outcome resolved from the final history, so that the
// model is deterministic and the search stays small:
//   - a put or txn wrote a value, which is unique: if the final history holds
//     it, the write happened at that revision (still with an open end); if
//     not, it did not happen and is left out;
//   - a revoke happened at the revision that deletes the keys of its lease, if
//     no acknowledged operation explains that revision;
//   - the deletes of a key take the revisions that delete it and that nothing
//     else explains, the earliest call the earliest revision (every such
//     operation is open to the end of the history, so if any assignment is
//     linearizable, this one is).
//
// An operation left unresolved had no effect and is left out; a revision that
// no operation explains stays in the history, and the reads that see it fail
// the check.
func porcupineOps(ops []op, f *finalHistory) []porcupine.Operation {
	written := map[string]event{}
	deletedLeases := map[int64]map[int64]bool{} // revision of deletes → leases of the keys deleted
	lease := map[string]int64{}
	for _, r := range slices.Sorted(maps.Keys(f.Events)) {
		for _, e := range f.Events[r] {
			if !e.Delete {
				written[e.Value] = e
				lease[e.Key] = e.Lease
				continue
			}
			if deletedLeases[r] == nil {
				deletedLeases[r] = map[int64]bool{}
			}
			deletedLeases[r][lease[e.Key]] = true
			delete(lease, e.Key)
		}
	}
	explained := map[int64]bool{}
	for _, o := range ops {
		if o.Out.Unknown {
			continue
		}
		switch {
		case o.In.Kind == opPut, o.In.Kind == opTxn && o.Out.Succeeded, o.In.Kind == opDelete && o.Out.Deleted > 0,
			o.In.Kind == opRevoke && deletedLeases[o.Out.Rev][o.In.Lease]:
			explained[o.Out.Rev] = true
		}
	}
	onlyDeletes := func(r int64) bool {
		evs := f.Events[r]
		for _, e := range evs {
			if !e.Delete {
				return false
			}
		}
		return len(evs) > 0
	}
	var unexplained []int64
	for _, r := range slices.Sorted(maps.Keys(f.Events)) {
		if !explained[r] && onlyDeletes(r) {
			unexplained = append(unexplained, r)
		}
	}
	take := func(match func(r int64) bool) int64 {
		for i, r := range unexplained {
			if match(r) {
				unexplained = slices.Delete(unexplained, i, i+1)
				return r
			}
		}
		return 0
	}
	byCall := slices.Clone(ops)
	slices.SortStableFunc(byCall, func(a, b op) int { return cmp.Compare(a.Call, b.Call) })
	resolved := map[int]int64{} // index in byCall → revision
	for i, o := range byCall {
		if o.Out.Unknown && o.In.Kind == opRevoke {
			resolved[i] = take(func(r int64) bool {
				return len(deletedLeases[r]) == 1 && deletedLeases[r][o.In.Lease]
			})
		}
	}
	for i, o := range byCall {
		if o.Out.Unknown && o.In.Kind == opDelete {
			resolved[i] = take(func(r int64) bool {
				return len(f.Events[r]) == 1 && f.Events[r][0].Key == o.In.Key
			})
		}
	}
	var out []porcupine.Operation
	for i, o := range byCall {
		if o.Out.Unknown {
			switch o.In.Kind {
			case opPut, opTxn:
				e, ok := written[o.In.Value]
				if !ok || e.Key != o.In.Key {
					continue
				}
				o.Out.Rev = e.Rev
			default:
				if resolved[i] == 0 {
					continue
				}
				o.Out.Rev = resolved[i]
			}
		}
		out = append(out, porcupine.Operation{ClientId: o.Client, Input: o.In, Call: o.Call, Output: o.Out, Return: o.Return})
	}
	return out
}

// checkLinearizable runs porcupine; it returns the result and, when the
// history is not linearizable, the visualization written to htmlPath.
func checkLinearizable(ops []porcupine.Operation, timeout time.Duration, htmlPath string) (porcupine.CheckResult, error) {
	res, info := porcupine.CheckOperationsVerbose(kvModel, ops, timeout)
	if res == porcupine.Illegal && htmlPath != "" {
		return res, porcupine.VisualizePath(kvModel, info, htmlPath)
	}
	return res, nil
}
