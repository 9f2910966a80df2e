package robustness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// result sums up one run; scripts/robustness.sh reads these as JSON lines.
type result struct {
	Server           string         `json:"server"`
	Seed             int64          `json:"seed"`
	Run              int            `json:"run"`
	Duration         string         `json:"duration"`
	Faults           map[string]int `json:"faults"`
	Ops              int            `json:"ops"`
	UnknownOps       int            `json:"unknown_ops"`
	UnknownErrors    map[string]int `json:"unknown_errors,omitempty"` // the unknown outcomes by error message
	FinalRev         int64          `json:"final_rev"`
	Term             uint64         `json:"term"` // the raft term at the end: how many elections the run cost
	Compactions      int            `json:"compactions"`
	Linearizable     string         `json:"linearizable"` // Ok, Illegal, Unknown (checker timed out), or not checked
	CheckTime        string         `json:"check_time"`   // how long porcupine took
	LinViolations    int            `json:"lin_violations"`
	LostWrites       int            `json:"lost_writes"`
	WatchAnomalies   int            `json:"watch_anomalies"`
	WatchCompacted   int            `json:"watch_compacted"` // watches cancelled as compacted (then resumed)
	Unhealthy        int            `json:"unhealthy_after_last_heal"`
	UnhealthyAnyHeal int            `json:"unhealthy_after_any_heal"` // the last heal included
	NoLeaderCancels  int            `json:"no_leader_cancels"`
	NoLeaderExpected int            `json:"no_leader_expected"`
	NoLeaderMissed   int            `json:"no_leader_missed"`
	WALMismatches    int            `json:"wal_mismatches"` // indexes whose committed entries differ between members
	// KeptLeases counts the leases kept alive through one member each, for
	// the whole run or until lost; KeptLeasesLost those lost (a fault on
	// their member, mostly); WronglyRevokedLeases those lost while they
	// should have lived (see wronglyRevoked).
	KeptLeases           int `json:"kept_leases"`
	KeptLeasesLost       int `json:"kept_leases_lost"`
	WronglyRevokedLeases int `json:"wrongly_revoked_leases"`
	// DiskOutcomes is what each disk-eio and disk-full fault did.
	DiskOutcomes []diskOutcome `json:"disk_outcomes,omitempty"`
	// SkippedFaults lists the fault kinds asked for that could not run
	// here (the disk faults without FUSE or root).
	SkippedFaults []string `json:"skipped_faults,omitempty"`
	Failures      []string `json:"failures,omitempty"`
	// KnownDefects lists what the etcd control did wrong that etcd 3.7.3 is
	// known to do (see frozenLeaderRevoke): reported, not failed, so that the
	// control's own defect does not hide cairn's result.
	KnownDefects []string `json:"known_defects,omitempty"`
	Artifacts    string   `json:"artifacts,omitempty"`
}

var outMu sync.Mutex

// appendResult adds r as one JSON line to path (nothing if path is "").
func appendResult(path string, r result) error {
	if path == "" {
		return nil
	}
	outMu.Lock()
	defer outMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	return err
}

// artifacts is what a failing run leaves behind.
type artifacts struct {
	Result   result         `json:"result"`
	Faults   []faultRecord  `json:"faults"`
	Ops      []op           `json:"history"`
	Watchers []*watcher     `json:"watchers"`
	Final    *finalHistory  `json:"final_history"`
	Schedule []fault        `json:"schedule"`
	Leases   []keptLease    `json:"kept_leases,omitempty"`
	Extra    map[string]any `json:"extra,omitempty"`
}

// artifactsDir is where a failing run saves its history and logs: under
// ROBUSTNESS_ARTIFACTS, or the system's temporary folder.
func artifactsDir(server string, seed int64) (string, error) {
	root := os.Getenv("ROBUSTNESS_ARTIFACTS")
	if root == "" {
		root = os.TempDir()
	}
	dir := filepath.Join(root, fmt.Sprintf("robustness-%s-seed%d-%s", server, seed, time.Now().UTC().Format("20060102T150405")))
	return dir, os.MkdirAll(dir, 0o755)
}

// save writes history.json and copies the member logs into dir.
func save(dir string, a artifacts, c *cluster) error {
	b, err := json.MarshalIndent(a, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "history.json"), b, 0o644); err != nil {
		return err
	}
	if c == nil {
		return nil
	}
	for _, m := range c.everyone() {
		log, err := os.ReadFile(m.logPath)
		if err != nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(m.logPath)), log, 0o644); err != nil {
			return err
		}
	}
	return nil
}
