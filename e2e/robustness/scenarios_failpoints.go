//go:build failpoints

package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cairnkv/cairn/internal/envdefault"
	"github.com/cairnkv/cairn/pkg/failpoint"
)

// Scenarios that arm cairn's failpoints (pkg/failpoint) on one member at
// the steps where etcd's robustness suite arms its gofail points, under
// the suite's load, compactions and watchers, with the suite's checks
// (linearizability, watches, lost writes, WALs, HashKV, compactions
// finished) after them:
//
//   - crashpoint: the member is restarted with one point armed to crash at
//     its Nth hit; the load (or a defragmentation, or a compaction, that the
//     fault asks for) reaches it, the member dies there with SIGKILL and
//     is started again, unarmed. etcd's raftBeforeSave (its issue 14370),
//     defragBeforeCopy (14685), compactBeforeSetFinishedCompact (17780,
//     19179: the restarted member must finish the compaction, and reads and
//     watches must be right), with the neighbouring points.
//   - watchdelay: the member is restarted with every watch response held
//     100-300 ms before it is sent (beforeSendWatchResponse=sleep), for 5 s,
//     while the store is compacted every second (etcd's issues 17529 and
//     18089): its watches fall behind the compactions, and must then be
//     complete and in order, or cancelled as compacted, never silently
//     short of events.
const (
	faultCrashpoint faultKind = "crashpoint"
	faultWatchDelay faultKind = "watchdelay"
)

// crashPoint is a point the crashpoint fault arms, and how it is reached.
type crashPoint struct {
	name    string
	maxHit  int    // the member crashes at hit N, N drawn from 1..maxHit
	trigger string // "": the load reaches it; "defrag" or "compact": the fault asks for one
}

var crashPoints = []crashPoint{
	{name: "raftBeforeSave", maxHit: 40},
	{name: "raftAfterSave", maxHit: 40},
	{name: "walBeforeFsync", maxHit: 40},
	{name: "walAfterFsync", maxHit: 40},
	{name: "applyBeforeConsistentIndex", maxHit: 40},
	{name: "backendBeforeCommit", maxHit: 5},
	{name: "backendAfterCommit", maxHit: 5},
	{name: "defragBeforeCopy", maxHit: 1, trigger: "defrag"},
	{name: "defragBeforeRename", maxHit: 1, trigger: "defrag"},
	{name: "compactBeforeSetFinishedCompact", maxHit: 1, trigger: "compact"},
	{name: "compactAfterSetFinishedCompact", maxHit: 1, trigger: "compact"},
}

// armablePoints are the points the crashpoint fault draws from: those
// ROBUSTNESS_CRASHPOINTS names (comma-separated), or all of them.
func armablePoints() []crashPoint {
	names := envdefault.String("ROBUSTNESS_CRASHPOINTS", "")
	if names == "" {
		return crashPoints
	}
	var ps []crashPoint
	for _, p := range crashPoints {
		if slices.Contains(strings.Split(names, ","), p.name) {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		panic(fmt.Sprintf("ROBUSTNESS_CRASHPOINTS=%s names none of the crash points", names))
	}
	return ps
}

func init() {
	points := armablePoints()
	taggedFaults[faultCrashpoint] = taggedFault{
		plan: func(rnd *rand.Rand, f *fault) {
			p := points[rnd.IntN(len(points))]
			f.Point, f.Hit, f.Hold = p.name, 1+rnd.IntN(p.maxHit), 4*time.Second
			if rnd.IntN(2) == 0 {
				f.Member = -1 // half the time the leader
			}
		},
		extra:        4 * time.Second,
		compactEvery: 3 * time.Second,
		inject:       injectCrashpoint,
	}
	taggedFaults[faultWatchDelay] = taggedFault{
		plan: func(rnd *rand.Rand, f *fault) {
			f.Point, f.Hold, f.Delay = "beforeSendWatchResponse", 5*time.Second, time.Duration(500+rnd.IntN(1501))*time.Millisecond
		},
		extra:        3 * time.Second,
		compactEvery: time.Second,
		inject:       injectWatchDelay,
	}
}

// restartArmed stops m gracefully and starts it with spec in CAIRN_FAILPOINTS
// (spec "": unarmed).
func restartArmed(m *member, spec string) error {
	if err := m.stopWith(syscall.SIGTERM, gracefulTimeout); err != nil {
		return err
	}
	if spec != "" {
		m.setEnv(failpoint.EnvVar + "=" + spec)
	}
	defer m.setEnv()
	return m.start()
}

func injectCrashpoint(ctx context.Context, c *cluster, m *member, f fault, rec *faultRecord) error {
	var p crashPoint
	for _, cp := range crashPoints {
		if cp.name == f.Point {
			p = cp
		}
	}
	if err := restartArmed(m, fmt.Sprintf("%s=crash@%d", f.Point, f.Hit)); err != nil {
		return err
	}
	exited := m.exitedCh()
	deadline := time.Now().Add(f.Hold)
	if p.trigger != "" {
		if bad := c.waitHealthy(f.Hold, m); len(bad) > 0 && !isClosed(exited) {
			return fmt.Errorf("armed %s, not healthy: %v", m.name, bad)
		}
		switch p.trigger {
		case "defrag":
			cli, err := c.client(m)
			if err != nil {
				return err
			}
			dctx, cancel := context.WithTimeout(ctx, time.Until(deadline))
			_, err = cli.Defragment(dctx, m.endpoint()) // fails when the point kills m
			cancel()
			cli.Close()
			if err == nil {
				rec.Note = "defragmented without reaching the point; "
			}
		case "compact":
			rev, err := c.compactor.compact(ctx)
			if err != nil {
				rec.Note = fmt.Sprintf("compaction: %v; ", err)
			} else {
				rec.Note = fmt.Sprintf("compacted at %d; ", rev)
			}
		}
	}
	select {
	case <-exited:
	case <-time.After(time.Until(deadline)):
	case <-ctx.Done():
	}
	if isClosed(exited) {
		if !m.expectExit(fmt.Sprintf("failpoint %s: crash (hit %d)", f.Point, f.Hit)) {
			return fmt.Errorf("%s exited, not at %s (see its log)", m.name, f.Point)
		}
		rec.Note += fmt.Sprintf("crashed at %s hit %d", f.Point, f.Hit)
	} else {
		rec.Note += fmt.Sprintf("%s hit %d not reached in %v", f.Point, f.Hit, f.Hold)
	}
	return restartArmed(m, "")
}

func injectWatchDelay(ctx context.Context, c *cluster, m *member, f fault, rec *faultRecord) error {
	if err := restartArmed(m, fmt.Sprintf("%s=sleep(%v)", f.Point, f.Delay)); err != nil {
		return err
	}
	hold(ctx, f.Hold)
	rec.Note = fmt.Sprintf("watch responses held %v each", f.Delay)
	return restartArmed(m, "")
}
