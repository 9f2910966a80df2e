package robustness

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The model is the whole store as the clients can see it: the keys under
// keyPrefix with their values, mod revisions and leases, and the store's
// revision. Every response carries a revision (its header's), which pins
// the operation to one point of the sequence: that is what keeps the search
// small enough without partitioning (a range reads every key).

// opKind names an operation of the load.
type opKind string

const (
	opPut    opKind = "put"
	opGet    opKind = "get"
	opRange  opKind = "range"
	opTxn    opKind = "txn" // if mod_revision(key) == ModRev then put(key, value) else get(key)
	opDelete opKind = "delete"
	opRevoke opKind = "revoke"
)

// input is what a client asked for.
type input struct {
	Kind   opKind `json:"kind"`
	Key    string `json:"key,omitempty"`
	Value  string `json:"value,omitempty"`
	Lease  int64  `json:"lease,omitempty"`   // put: attach; revoke: the lease
	ModRev int64  `json:"mod_rev,omitempty"` // txn: the compared mod_revision (0: absent)
}

// kv is one key's state as a read returns it.
type kv struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	ModRev int64  `json:"mod_rev"`
	Lease  int64  `json:"lease,omitempty"`
}

// output is what the client was answered. Unknown outputs belong to
// operations that failed in a way that leaves their outcome open (a timeout,
// a lost connection): they may have happened, or not.
type output struct {
	Unknown   bool   `json:"unknown,omitempty"`
	Err       string `json:"err,omitempty"`
	Rev       int64  `json:"rev"`                 // the response header's revision
	Succeeded bool   `json:"succeeded,omitempty"` // txn
	Deleted   int64  `json:"deleted,omitempty"`   // delete
	KVs       []kv   `json:"kvs,omitempty"`       // get, range, failed txn
}

// state is an immutable snapshot of the model.
type state struct {
	rev int64
	kvs map[string]kv
}

func (s state) with(k kv) state {
	n := state{rev: k.ModRev, kvs: maps.Clone(s.kvs)}
	n.kvs[k.Key] = k
	return n
}

func (s state) without(keys []string) state {
	n := state{rev: s.rev + 1, kvs: maps.Clone(s.kvs)}
	for _, k := range keys {
		delete(n.kvs, k)
	}
	return n
}

// leased lists the keys attached to lease, sorted.
func (s state) leased(lease int64) []string {
	var keys []string
	for k, v := range s.kvs {
		if v.Lease == lease {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func (s state) read(prefix bool, key string) []kv {
	var out []kv
	for k, v := range s.kvs {
		if k == key || (prefix && strings.HasPrefix(k, key)) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b kv) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// step returns the states that op with its output can lead to from s (none:
// it could not have happened here).
func step(s state, in input, out output) []state {
	if out.Unknown {
		return stepUnknown(s, in, out)
	}
	switch in.Kind {
	case opPut:
		if out.Rev != s.rev+1 {
			return nil
		}
		return []state{s.with(kv{in.Key, in.Value, out.Rev, in.Lease})}
	case opGet, opRange:
		if out.Rev != s.rev || !slices.Equal(out.KVs, s.read(in.Kind == opRange, in.Key)) {
			return nil
		}
		return []state{s}
	case opTxn:
		if s.kvs[in.Key].ModRev == in.ModRev {
			if !out.Succeeded || out.Rev != s.rev+1 {
				return nil
			}
			return []state{s.with(kv{in.Key, in.Value, out.Rev, 0})}
		}
		if out.Succeeded || out.Rev != s.rev || !slices.Equal(out.KVs, s.read(false, in.Key)) {
			return nil
		}
		return []state{s}
	case opDelete:
		if _, ok := s.kvs[in.Key]; ok {
			if out.Deleted != 1 || out.Rev != s.rev+1 {
				return nil
			}
			return []state{s.without([]string{in.Key})}
		}
		if out.Deleted != 0 || out.Rev != s.rev {
			return nil
		}
		return []state{s}
	case opRevoke:
		// The header of a revoke carries the revision after it, as etcd's.
		if keys := s.leased(in.Lease); len(keys) > 0 {
			if out.Rev != s.rev+1 {
				return nil
			}
			return []state{s.without(keys)}
		}
		if out.Rev != s.rev {
			return nil
		}
		return []state{s}
	}
	return nil
}

// stepUnknown is step for an operation whose outcome is open, resolved
// beforehand from the final history (porcupineOps): Rev is the revision at
// which it took effect; those that took none are left out of the history.
func stepUnknown(s state, in input, out output) []state {
	if out.Rev != s.rev+1 {
		return nil
	}
	switch in.Kind {
	case opPut:
		return []state{s.with(kv{in.Key, in.Value, out.Rev, in.Lease})}
	case opTxn:
		if s.kvs[in.Key].ModRev != in.ModRev {
			return nil
		}
		return []state{s.with(kv{in.Key, in.Value, out.Rev, 0})}
	case opDelete:
		if _, ok := s.kvs[in.Key]; !ok {
			return nil
		}
		return []state{s.without([]string{in.Key})}
	case opRevoke:
		keys := s.leased(in.Lease)
		if len(keys) == 0 {
			return nil
		}
		return []state{s.without(keys)}
	}
	return nil
}

func equalStates(a, b state) bool {
	return a.rev == b.rev && maps.Equal(a.kvs, b.kvs)
}

func hashState(s state) uint64 {
	h := fnv.New64a()
	fmt.Fprint(h, s.rev)
	for _, k := range slices.Sorted(maps.Keys(s.kvs)) {
		v := s.kvs[k]
		fmt.Fprint(h, "|", k, "=", v.Value, "@", v.ModRev, "~", v.Lease)
	}
	return h.Sum64()
}

// kvModel is the porcupine model of the store.
var kvModel = (&porcupine.NondeterministicModel{
	Init: func() []any { return []any{state{rev: 1, kvs: map[string]kv{}}} },
	Step: func(st, in, out any) []any {
		var next []any
		for _, s := range step(st.(state), in.(input), out.(output)) {
			next = append(next, s)
		}
		return next
	},
	Equal: func(a, b any) bool { return equalStates(a.(state), b.(state)) },
	Hash:  func(s any) uint64 { return hashState(s.(state)) },
	DescribeOperation: func(in, out any) string {
		return describe(in.(input), out.(output))
	},
	DescribeState: func(st any) string {
		s := st.(state)
		var b strings.Builder
		fmt.Fprintf(&b, "rev %d:", s.rev)
		for _, v := range s.read(true, "") {
			fmt.Fprintf(&b, " %s=%s@%d", v.Key, v.Value, v.ModRev)
			if v.Lease != 0 {
				fmt.Fprintf(&b, "(lease %x)", v.Lease)
			}
		}
		return b.String()
	},
}).ToModel()

func describe(in input, out output) string {
	var call string
	switch in.Kind {
	case opPut:
		call = fmt.Sprintf("put(%s, %s", in.Key, in.Value)
		if in.Lease != 0 {
			call += fmt.Sprintf(", lease %x", in.Lease)
		}
		call += ")"
	case opGet, opRange, opDelete:
		call = fmt.Sprintf("%s(%s)", in.Kind, in.Key)
	case opTxn:
		call = fmt.Sprintf("txn(mod(%s)==%d ? put %s)", in.Key, in.ModRev, in.Value)
	case opRevoke:
		call = fmt.Sprintf("revoke(%x)", in.Lease)
	}
	if out.Unknown {
		if out.Rev != 0 {
			return fmt.Sprintf("%s -> unknown (%s), seen at rev %d", call, out.Err, out.Rev)
		}
		return fmt.Sprintf("%s -> unknown (%s)", call, out.Err)
	}
	res := fmt.Sprintf("rev %d", out.Rev)
	switch in.Kind {
	case opTxn:
		res += fmt.Sprintf(" succeeded=%v", out.Succeeded)
	case opDelete:
		res += fmt.Sprintf(" deleted=%d", out.Deleted)
	}
	if len(out.KVs) > 0 || in.Kind == opGet || in.Kind == opRange {
		var parts []string
		for _, v := range out.KVs {
			parts = append(parts, fmt.Sprintf("%s=%s@%d", v.Key, v.Value, v.ModRev))
		}
		res += " [" + strings.Join(parts, " ") + "]"
	}
	return call + " -> " + res
}
