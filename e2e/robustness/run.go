package robustness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// runConfig is one run.
type runConfig struct {
	server   string   // "cairn" or "etcd"
	argv     []string // the member command line before its flags
	seed     int64
	run      int
	duration time.Duration
	faults   []fault
	window   time.Duration // the faults end within it
	workers  int
	checkFor time.Duration // porcupine's time limit
	// compactEvery is the interval of the compactions during the load (0: none
	// but those a fault asks for).
	compactEvery time.Duration
	disks        bool // each member's data dir on its own faultfs mount
}

// healthWithin is how soon after the last heal every member must be healthy.
const healthWithin = 5 * time.Second

// runOnce starts a cluster, runs the load, the watchers and the faults, then
// checks everything; it returns the result, with its failures listed.
func runOnce(t *testing.T, cfg runConfig) (r result) {
	r = result{Server: cfg.server, Seed: cfg.seed, Run: cfg.run, Duration: cfg.duration.String(),
		Faults: map[string]int{}, UnknownErrors: map[string]int{}, Linearizable: "not checked"}
	fail := func(format string, args ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, args...)) }
	dir := t.TempDir()
	c, err := startCluster(t, cfg.server, cfg.argv, dir, cfg.disks)
	h := newHistory()
	a := artifacts{Schedule: cfg.faults}
	var expiries []op // the kept leases' expiries, for the checker
	var watchMu sync.Mutex
	var watchers []*watcher
	defer func() {
		if len(r.Failures) == 0 && len(r.KnownDefects) == 0 && r.Linearizable != string(porcupine.Unknown) {
			if r.Artifacts != "" {
				_ = os.RemoveAll(r.Artifacts)
			}
			r.Artifacts = ""
			return
		}
		var err error
		if r.Artifacts == "" {
			r.Artifacts, err = artifactsDir(cfg.server, cfg.seed)
		}
		if err == nil {
			a.Result, a.Ops = r, append(h.all(), expiries...)
			watchMu.Lock()
			a.Watchers = slices.Clone(watchers)
			watchMu.Unlock()
			err = save(r.Artifacts, a, c)
		}
		if err != nil {
			t.Logf("saving the artifacts failed: %v", err)
		}
	}()
	if err != nil {
		fail("start: %v", err)
		return r
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	// A watcher on every member, and a require-leader one on every member
	// too; a member that joins gets its own, from revision 1 as well.
	addWatchers := func(m *member) error {
		for _, rl := range []bool{false, true} {
			w := &watcher{Name: m.name, Member: m.name, RequireLeader: rl}
			if rl {
				w.Name += "-require-leader"
			}
			cli, err := c.client(m)
			if err != nil {
				return err
			}
			watchMu.Lock()
			watchers = append(watchers, w)
			watchMu.Unlock()
			wg.Go(func() {
				defer cli.Close()
				w.run(ctx, cli, h)
			})
		}
		return nil
	}
	for _, m := range c.list() {
		if err := addWatchers(m); err != nil {
			fail("watch client: %v", err)
			stop()
			wg.Wait()
			return r
		}
	}
	c.mu.Lock()
	c.onReplace = func(old, nw *member) {
		watchMu.Lock()
		for _, w := range watchers {
			if w.Member == old.name {
				w.mu.Lock()
				w.Retired = true
				w.mu.Unlock()
			}
		}
		watchMu.Unlock()
		if err := addWatchers(nw); err != nil {
			t.Logf("watchers on %s: %v", nw.name, err)
		}
	}
	c.mu.Unlock()

	compactions := newCompactor(c)
	c.mu.Lock()
	c.compactor = compactions
	c.mu.Unlock()
	compactCtx, stopCompacting := context.WithCancel(ctx)
	compactorDone := make(chan struct{})
	go func() {
		defer close(compactorDone)
		if cfg.compactEvery > 0 {
			compactions.run(compactCtx, cfg.compactEvery, t.Logf)
		}
	}()

	var recs []faultRecord
	faultCtx, stopFaults := context.WithCancel(context.Background())
	defer stopFaults()
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		recs = runFaults(faultCtx, c, h, cfg.faults, cfg.window, t.Logf)
	}()
	// The keepers' leases, kept alive through each member; they grant no
	// lease and put no key once the load is over.
	loadCtx, endLoad := context.WithTimeout(ctx, cfg.duration)
	defer endLoad()
	keepers, err := startKeepers(ctx, loadCtx, c, h, &wg)
	if err != nil {
		fail("lease keepers: %v", err)
	}
	if err := runLoad(ctx, c, h, loadConfig{workers: cfg.workers, duration: cfg.duration, maxOps: 5000,
		interval: 50 * time.Millisecond}, cfg.seed); err != nil {
		fail("load: %v", err)
	}
	// The faults end before the load does; past a grace period they are cut short.
	select {
	case <-faultsDone:
	case <-time.After(30 * time.Second):
		fail("the faults did not end 30 s after the load")
		stopFaults()
		<-faultsDone
	}
	stopCompacting()
	<-compactorDone
	a.Faults = recs
	_, _, lastCompaction, compacted := compactions.history()
	r.Compactions = compacted
	ops := h.all()
	r.Ops = len(ops)
	for _, o := range ops {
		if o.Out.Unknown {
			r.UnknownOps++
			r.UnknownErrors[o.Out.Err]++
		}
	}
	for _, rec := range recs {
		r.Faults[string(rec.Kind)]++
		if rec.Err != "" {
			fail("fault %s on %s: %s", rec.Kind, rec.Target, rec.Err)
		}
		if rec.Disk != nil {
			r.DiskOutcomes = append(r.DiskOutcomes, *rec.Disk)
		}
	}
	// Every member healthy within 5 s of each heal, the last one included.
	for i, rec := range recs {
		r.UnhealthyAnyHeal += len(rec.Unhealthy)
		if i == len(recs)-1 {
			r.Unhealthy = len(rec.Unhealthy)
		}
		for _, u := range rec.Unhealthy {
			fail("member %s not healthy %v after the heal of %s on %s at %.1fs", u, healthWithin, rec.Kind, rec.Target, float64(rec.Heal)/1e9)
		}
	}

	// Require-leader watches on an isolated member were cancelled (checked
	// before the end of the run, which may not come back healthy).
	watchMu.Lock()
	current := slices.Clone(watchers)
	watchMu.Unlock()
	for _, rec := range recs {
		if rec.Kind != faultIsolate {
			continue
		}
		r.NoLeaderExpected++
		for _, w := range current {
			if w.RequireLeader && w.Member == rec.Target && !w.noLeaderBetween(rec.Start, rec.Heal+int64(time.Second)) {
				r.NoLeaderMissed++
				fail("require-leader watch on %s not cancelled with %q while it was isolated (%.1fs-%.1fs)",
					rec.Target, "etcdserver: no leader", float64(rec.Start)/1e9, float64(rec.Heal)/1e9)
			}
		}
	}
	// Undo anything left and wait for the whole cluster.
	for _, m := range c.everyone() {
		for _, crash := range m.crashed() {
			fail("crash: %s (log %s)", crash, filepath.Base(m.logPath))
		}
	}
	c.net.Heal()
	for _, m := range c.list() {
		m.signal(syscall.SIGCONT)
		if !m.running() {
			if err := m.start(); err != nil {
				fail("restart %s: %v", m.name, err)
			}
		}
	}
	if bad := c.waitHealthy(20*time.Second, c.list()...); len(bad) > 0 {
		fail("members not healthy 20 s after the end of the run: %v (goroutine dumps in their logs)", bad)
		for _, m := range c.list() {
			m.dump()
		}
		stop()
		wg.Wait()
		return r
	}

	final, err := readFinal(c, c.list()[0], compactions)
	if err != nil {
		fail("%v", err)
		stop()
		wg.Wait()
		return r
	}
	a.Final = final
	r.FinalRev = final.Rev
	_, r.Term = c.leader()
	if g := final.gaps(); len(g) > 0 {
		fail("the final history has no events at revisions %v", head(g, 20))
	}
	for _, s := range checkFinalState(c, final) {
		fail("final state: %s", s)
	}
	for _, s := range checkHashKV(c, final.Rev) {
		fail("hash: %s", s)
	}

	watchMu.Lock()
	watchers = slices.Clone(watchers)
	watchMu.Unlock()
	// Watchers must catch up with the final revision, then they stop.
	deadline := time.Now().Add(10 * time.Second)
	for _, w := range watchers {
		for !w.Retired && w.lastRev() < final.Rev && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond) // polling a condition
		}
	}
	askKeptLeasesAtEnd(c, keepers)
	stop()
	wg.Wait()
	// No kept lease lost while it should have lived.
	leases := keptLeases(keepers, watchers, final, h.now())
	a.Leases = leases
	r.KeptLeases = len(leases)
	for _, l := range leases {
		if l.Lost != 0 {
			r.KeptLeasesLost++
		}
	}
	for _, l := range leases {
		for _, s := range wronglyRevoked([]keptLease{l}, recs) {
			r.WronglyRevokedLeases++
			if rec, ok := frozenLeaderRevoke(l, recs); ok && cfg.server == "etcd" {
				r.KnownDefects = append(r.KnownDefects, fmt.Sprintf("lease: %s; lost %v after the %s of %s ended: a frozen leader's revoke on its return (etcd-io/etcd#15247)",
					s, time.Duration(l.Lost-rec.Heal).Round(time.Millisecond), rec.Kind, rec.Target))
				continue
			}
			fail("lease: %s", s)
		}
	}
	expiries = expiryOps(leases, h)
	for _, w := range watchers {
		anomalies := checkWatch(w, final.Events, final.Rev)
		r.WatchAnomalies += len(anomalies)
		r.WatchCompacted += w.compactedCount()
		for _, s := range anomalies {
			fail("watch: %s", s)
		}
		if w.RequireLeader {
			r.NoLeaderCancels += w.noLeaderCount()
		}
	}

	// Every member's WAL, once they have all stopped: the entries two
	// members hold as committed at the same index must be the same.
	for _, m := range c.everyone() {
		if err := m.stopWith(syscall.SIGTERM, gracefulTimeout); err != nil {
			fail("stop %s: %v", m.name, err)
		}
	}
	damage, mismatches := checkWALs(c.everyone())
	r.WALMismatches = len(mismatches)
	for _, s := range damage {
		fail("wal: %s", s)
	}
	for _, s := range mismatches {
		fail("wal: %s", s)
	}
	// Every compaction finished: none is left scheduled, a crash in the
	// middle of one included.
	if compacted > 0 {
		for _, m := range c.list() {
			scheduled, finished, err := compactionState(m.dataDir)
			switch {
			case err != nil:
				fail("compaction state of %s: %v", m.name, err)
			case scheduled < lastCompaction || finished != scheduled:
				fail("compaction of %s: scheduled at %d, finished at %d; the last compaction was at %d", m.name, scheduled, finished, lastCompaction)
			}
		}
	}

	lost := lostWrites(ops, final)
	r.LostWrites = len(lost)
	for _, s := range head(lost, 20) {
		fail("lost write: %s", s)
	}
	html := ""
	if out, err := artifactsDir(cfg.server, cfg.seed); err == nil {
		html = filepath.Join(out, "linearizability.html")
		r.Artifacts = out // removed at the end if nothing failed
	}
	checkStart := time.Now()
	res, err := checkLinearizable(porcupineOps(append(ops, expiries...), final), cfg.checkFor, html)
	r.Linearizable = string(res)
	r.CheckTime = time.Since(checkStart).Round(time.Millisecond).String()
	switch res {
	case porcupine.Illegal:
		r.LinViolations = 1
		fail("the history is not linearizable (see %s)", html)
	case porcupine.Unknown:
		t.Logf("porcupine gave up after %v: linearizability not decided; history kept in %s (check it again with ROBUSTNESS_RECHECK)", cfg.checkFor, r.Artifacts)
	}
	if err != nil {
		t.Logf("visualization: %v", err)
	}
	return r
}

func head[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}
