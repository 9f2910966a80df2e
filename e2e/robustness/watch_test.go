package robustness

import (
	"strings"
	"testing"
)

func watcherOf(resps ...[]event) *watcher {
	w := &watcher{Name: "w"}
	for _, evs := range resps {
		w.Resps = append(w.Resps, watchResp{Events: evs})
	}
	return w
}

// compactedAt records that w's watch was cancelled by a compaction at rev
// after its first before responses.
func compactedAt(w *watcher, before int, rev int64) *watcher {
	w.Ends = append(w.Ends, watchErr{Err: "etcdserver: mvcc: required revision has been compacted", Compacted: rev, Before: before})
	return w
}

func TestCheckWatch(t *testing.T) {
	e2 := event{Rev: 2, Key: "a", Value: "1"}
	e3a := event{Rev: 3, Key: "a", Delete: true}
	e3b := event{Rev: 3, Key: "b", Delete: true}
	e4 := event{Rev: 4, Key: "b", Value: "2"}
	final := map[int64][]event{2: {e2}, 3: {e3a, e3b}, 4: {e4}}
	for _, tc := range []struct {
		name  string
		w     *watcher
		wants string // a substring of the first anomaly, "" for none
	}{
		{"complete", watcherOf([]event{e2}, []event{e3a, e3b, e4}), ""},
		{"gap", watcherOf([]event{e2}, []event{e4}), "missing"},
		{"duplicate", watcherOf([]event{e2, e3a, e3b}, []event{e3a, e3b, e4}), "duplicate"},
		{"split revision", watcherOf([]event{e2, e3a}, []event{e3b, e4}), "revision 3"},
		{"behind", watcherOf([]event{e2}), "final revision is 4"},
		{"wrong value", watcherOf([]event{{Rev: 2, Key: "a", Value: "x"}}, []event{e3a, e3b, e4}), "final history has"},
		// A watch cancelled by a compaction at 4 goes on from 4: 3 is gone.
		{"compacted", compactedAt(watcherOf([]event{e2}, []event{e4}), 1, 4), ""},
		// A compaction at 3 leaves 3 readable: the watch must deliver it.
		{"missing above the compaction", compactedAt(watcherOf([]event{e2}, []event{e4}), 1, 3), "revisions 3..3 missing"},
		// A compaction explains a gap only right after the cancel.
		{"compaction elsewhere", compactedAt(watcherOf([]event{e2}, []event{e4}), 0, 4), "revisions 3..3 missing"},
	} {
		got := checkWatch(tc.w, final, 4)
		switch {
		case tc.wants == "" && len(got) > 0:
			t.Errorf("%s: anomalies %q, want none", tc.name, got)
		case tc.wants != "" && (len(got) == 0 || !strings.Contains(got[0], tc.wants)):
			t.Errorf("%s: anomalies %q, want one with %q", tc.name, got, tc.wants)
		}
	}
}
