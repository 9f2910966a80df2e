package robustness

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// opAt is an operation of a made-up history, from call to ret (ret < 0:
// unknown outcome).
func opAt(client int, call, ret int64, in input, out output) op {
	if ret < 0 {
		ret = math.MaxInt64
		out.Unknown = true
	}
	return op{Client: client, In: in, Out: out, Call: call, Return: ret}
}

func check(t *testing.T, ops []op, final *finalHistory) porcupine.CheckResult {
	t.Helper()
	res, err := checkLinearizable(porcupineOps(ops, final), 10*time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func finalOf(rev int64, evs ...event) *finalHistory {
	f := &finalHistory{Rev: rev, Events: map[int64][]event{}}
	for _, e := range evs {
		f.Events[e.Rev] = append(f.Events[e.Rev], e)
	}
	return f
}

func TestModelAcceptsALinearizableHistory(t *testing.T) {
	final := finalOf(4,
		event{Rev: 2, Key: "a", Value: "1"},
		event{Rev: 3, Key: "a", Value: "2"},
		event{Rev: 4, Key: "a", Delete: true})
	ops := []op{
		opAt(0, 0, 10, input{Kind: opPut, Key: "a", Value: "1"}, output{Rev: 2}),
		opAt(1, 5, 30, input{Kind: opGet, Key: "a"}, output{Rev: 3, KVs: []kv{{"a", "2", 3, 0}}}),
		opAt(2, 11, -1, input{Kind: opTxn, Key: "a", ModRev: 2, Value: "2"}, output{}), // unknown, happened at 3
		opAt(0, 40, 50, input{Kind: opDelete, Key: "a"}, output{Rev: 4, Deleted: 1}),
		opAt(1, 41, -1, input{Kind: opPut, Key: "a", Value: "never"}, output{}), // unknown, never happened
		opAt(1, 60, 70, input{Kind: opRange, Key: ""}, output{Rev: 4}),
	}
	if res := check(t, ops, final); res != porcupine.Ok {
		t.Fatalf("got %v, want Ok", res)
	}
}

func TestModelRejectsAStaleRead(t *testing.T) {
	final := finalOf(3, event{Rev: 2, Key: "a", Value: "1"}, event{Rev: 3, Key: "a", Value: "2"})
	ops := []op{
		opAt(0, 0, 10, input{Kind: opPut, Key: "a", Value: "1"}, output{Rev: 2}),
		opAt(0, 20, 30, input{Kind: opPut, Key: "a", Value: "2"}, output{Rev: 3}),
		// begins after the second put was acknowledged, yet sees the first
		opAt(1, 40, 50, input{Kind: opGet, Key: "a"}, output{Rev: 2, KVs: []kv{{"a", "1", 2, 0}}}),
	}
	if res := check(t, ops, final); res != porcupine.Illegal {
		t.Fatalf("got %v, want Illegal", res)
	}
}

func TestModelRejectsAReadOfAWriteThatNeverHappened(t *testing.T) {
	final := finalOf(2, event{Rev: 2, Key: "a", Value: "1"})
	ops := []op{
		opAt(0, 0, 10, input{Kind: opPut, Key: "a", Value: "1"}, output{Rev: 2}),
		opAt(1, 5, -1, input{Kind: opPut, Key: "a", Value: "ghost"}, output{}),
		opAt(2, 20, 30, input{Kind: opGet, Key: "a"}, output{Rev: 3, KVs: []kv{{"a", "ghost", 3, 0}}}),
	}
	if res := check(t, ops, final); res != porcupine.Illegal {
		t.Fatalf("got %v, want Illegal", res)
	}
}

func TestModelFollowsLeasesAndUnknownRevokes(t *testing.T) {
	final := finalOf(4,
		event{Rev: 2, Key: "a", Value: "1", Lease: 7},
		event{Rev: 3, Key: "b", Value: "2", Lease: 7},
		event{Rev: 4, Key: "a", Delete: true}, event{Rev: 4, Key: "b", Delete: true})
	ops := []op{
		opAt(0, 0, 10, input{Kind: opPut, Key: "a", Value: "1", Lease: 7}, output{Rev: 2}),
		opAt(0, 11, 20, input{Kind: opPut, Key: "b", Value: "2", Lease: 7}, output{Rev: 3}),
		opAt(0, 21, -1, input{Kind: opRevoke, Lease: 7}, output{}),
		opAt(1, 30, 40, input{Kind: opRange, Key: ""}, output{Rev: 4}),
	}
	if res := check(t, ops, final); res != porcupine.Ok {
		t.Fatalf("got %v, want Ok", res)
	}
	// Both keys of the lease go in one revision: a read that sees one of
	// them gone and the other still there is impossible.
	ops[3] = opAt(1, 30, 40, input{Kind: opRange, Key: ""}, output{Rev: 4, KVs: []kv{{"b", "2", 3, 7}}})
	if res := check(t, ops, final); res != porcupine.Illegal {
		t.Fatalf("got %v, want Illegal", res)
	}
}

func TestLostWritesFindsAnAcknowledgedPutMissingFromTheHistory(t *testing.T) {
	final := finalOf(2, event{Rev: 2, Key: "a", Value: "1"})
	ops := []op{
		opAt(0, 0, 10, input{Kind: opPut, Key: "a", Value: "1"}, output{Rev: 2}),
		opAt(0, 20, 30, input{Kind: opPut, Key: "a", Value: "2"}, output{Rev: 3}),
		opAt(1, 20, -1, input{Kind: opPut, Key: "a", Value: "3"}, output{}),
	}
	if lost := lostWrites(ops, final); len(lost) != 1 {
		t.Fatalf("lost writes %q, want the put of 2 only", lost)
	}
}

func TestUnknownDeletesTakeTheUnexplainedRevisions(t *testing.T) {
	final := finalOf(5,
		event{Rev: 2, Key: "a", Value: "1"},
		event{Rev: 3, Key: "a", Delete: true},
		event{Rev: 4, Key: "a", Value: "2"},
		event{Rev: 5, Key: "a", Delete: true})
	ops := []op{
		opAt(0, 0, 10, input{Kind: opPut, Key: "a", Value: "1"}, output{Rev: 2}),
		opAt(1, 5, -1, input{Kind: opDelete, Key: "a"}, output{}),
		opAt(2, 6, -1, input{Kind: opDelete, Key: "a"}, output{}),
		opAt(3, 7, -1, input{Kind: opDelete, Key: "a"}, output{}), // had no effect
		opAt(0, 20, 30, input{Kind: opPut, Key: "a", Value: "2"}, output{Rev: 4}),
		opAt(0, 40, 50, input{Kind: opGet, Key: "a"}, output{Rev: 5}),
	}
	if got := len(porcupineOps(ops, final)); got != 5 {
		t.Fatalf("%d operations, want 5 (the delete without effect left out)", got)
	}
	if res := check(t, ops, final); res != porcupine.Ok {
		t.Fatalf("got %v, want Ok", res)
	}
	// A delete nobody asked for fails the check.
	ops = slices.Delete(ops, 1, 4)
	if res := check(t, ops, final); res != porcupine.Illegal {
		t.Fatalf("without the deletes: got %v, want Illegal", res)
	}
}
