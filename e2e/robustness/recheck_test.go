package robustness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRecheck checks a saved history (history.json of a failing run) again,
// with the checker as it is now, when ROBUSTNESS_RECHECK names the file:
//
//	ROBUSTNESS_RECHECK=/tmp/robustness-.../history.json go test ./e2e/robustness/ -run TestRecheck -server etcd
func TestRecheck(t *testing.T) {
	path := os.Getenv("ROBUSTNESS_RECHECK")
	if path == "" {
		t.Skip("ROBUSTNESS_RECHECK names no saved history")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var a artifacts
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	if a.Final == nil {
		t.Fatal("the saved run has no final history")
	}
	lost := lostWrites(a.Ops, a.Final)
	for _, s := range head(lost, 20) {
		t.Errorf("lost write: %s", s)
	}
	for _, w := range a.Watchers {
		for _, s := range checkWatch(w, a.Final.Events, a.Final.Rev) {
			t.Errorf("watch: %s", s)
		}
	}
	html := filepath.Join(filepath.Dir(path), "linearizability-recheck.html")
	start := time.Now()
	res, err := checkLinearizable(porcupineOps(a.Ops, a.Final), *flagCheckFor, html)
	t.Logf("%d operations: %s in %v", len(a.Ops), res, time.Since(start))
	if err != nil {
		t.Error(err)
	}
	if res != "Ok" {
		t.Errorf("linearizability: %s (visualization in %s)", res, html)
	}
}
