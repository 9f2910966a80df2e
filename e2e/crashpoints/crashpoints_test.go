//go:build failpoints

package crashpoints

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnkv/cairn/pkg/walfmt"
)

// pointSpec is a crash point and how to reach it.
type pointSpec struct {
	name string
	// maxHit: the member crashes at hit N of the point, N drawn from 1..maxHit.
	maxHit int
	// catchUp: the member is stopped while the others take enough writes
	// that it must catch up from a snapshot of the leader's.
	catchUp bool
	// defrag: the member is asked to defragment once healthy.
	defrag bool
}

func (p pointSpec) label() string {
	if p.catchUp && !strings.HasPrefix(p.name, "snapshot") {
		return p.name + "_catchUp"
	}
	return p.name
}

var points = []pointSpec{
	{name: "walBeforeFsync", maxHit: 40},
	{name: "walAfterFsync", maxHit: 40},
	{name: "backendBeforeCommit", maxHit: 5},
	{name: "backendAfterCommit", maxHit: 5},
	{name: "applyBeforeConsistentIndex", maxHit: 40},
	// The WAL write of a Ready, as etcd's gofail points raftBeforeSave and
	// raftAfterSave (around walBeforeFsync and walAfterFsync).
	{name: "raftBeforeSave", maxHit: 40},
	{name: "raftAfterSave", maxHit: 40},
	// The .snap write of a snapshot the member takes itself (every
	// snapshotCount entries), then of one it receives from the leader.
	{name: "raftBeforeSaveSnapshot", maxHit: 1},
	{name: "raftAfterSaveSnapshot", maxHit: 1},
	{name: "raftBeforeSaveSnapshot", maxHit: 1, catchUp: true},
	{name: "raftAfterSaveSnapshot", maxHit: 1, catchUp: true},
	{name: "snapshotBeforeReceive", maxHit: 1, catchUp: true},
	{name: "snapshotAfterReceive", maxHit: 1, catchUp: true},
	{name: "defragBeforeCopy", maxHit: 1, defrag: true},
	{name: "defragBeforeRename", maxHit: 1, defrag: true},
	// The WAL points again, on a member catching up from a snapshot: one
	// of its first fsyncs is that of the snapshot's WAL record, just
	// before the received db replaces its own.
	{name: "walBeforeFsync", maxHit: 6, catchUp: true},
	{name: "walAfterFsync", maxHit: 6, catchUp: true},
}

// stats is what the rounds of one point (or one tear scenario) found.
type stats struct {
	name             string
	rounds           int
	kills            int // deaths by the crash point's SIGKILL (or the test's kill -9)
	leader, follower int // the victim's role when the round began
	snapshots        int // snapshots the victim installed from the leader after its restart
	repairs          int // torn WAL tails the victim repaired on restart
	checked          int // acknowledged puts looked for on every member, last round
	lost, phantoms   int
	hashAgree        int // rounds whose HashKV agreed on all members
	refused          int // restarts raft refused: the member's log had lost acknowledged entries
	lastRev          int64
	lastHash         string
	acked            int // puts the load had acknowledged at the end
	failedPuts       int64
	took             time.Duration
	failed           bool
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestCrashPoints starts three members and a write load, then, for each
// crash point, rounds times: arms the point on one member (the leader in
// even rounds, a follower in odd ones), waits until it crashes there,
// restarts it unarmed, and checks that every member holds every
// acknowledged put and that their HashKV agree. Then it tears the WAL tail
// of a killed member and checks that the member repairs it and rejoins.
//
// CAIRN_CRASHPOINTS_ROUNDS (5), CAIRN_CRASHPOINTS_RATE (puts per second,
// 150), CAIRN_CRASHPOINTS_SEED (random) and CAIRN_CRASHPOINTS_DIR (a
// folder to keep the data directories, logs and summary.md in; else a
// temporary one, removed; there, a point's folder is removed when it
// passes, unless CAIRN_CRASHPOINTS_KEEP=1) tune it; -run
// TestCrashPoints/NAME runs one point.
func TestCrashPoints(t *testing.T) {
	began := time.Now()
	rounds := envInt("CAIRN_CRASHPOINTS_ROUNDS", 5)
	rate := envInt("CAIRN_CRASHPOINTS_RATE", 150)
	seed := uint64(envInt("CAIRN_CRASHPOINTS_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("seed %d (CAIRN_CRASHPOINTS_SEED), %d rounds per point, load %d puts/s", seed, rounds, rate)
	rng := rand.New(rand.NewPCG(seed, 0))

	dir := t.TempDir()
	if keep := os.Getenv("CAIRN_CRASHPOINTS_DIR"); keep != "" {
		if err := os.MkdirAll(keep, 0o755); err != nil {
			t.Fatal(err)
		}
		d, err := os.MkdirTemp(keep, "run-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
	}
	t.Logf("data directories and logs in %s", dir)

	var all []*stats
	// Each point gets a cluster of its own, so that a member a point left
	// broken does not fail the points after it.
	run := func(st *stats, round func(t *testing.T, c *cluster, ld *load, st *stats, r int)) {
		all = append(all, st)
		st.failed = !t.Run(st.name, func(t *testing.T) {
			start := time.Now()
			defer func() { st.took = time.Since(start) }()
			sub := filepath.Join(dir, st.name)
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { // after the members are killed
				if !t.Failed() && os.Getenv("CAIRN_CRASHPOINTS_KEEP") != "1" {
					os.RemoveAll(sub) // 200 MB of preallocated WAL a point
				}
			})
			c := startCluster(t, sub)
			ld, err := startLoad(c.endpoints(), rate)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(ld.close) // before the members are killed
			defer func() {
				st.acked, st.failedPuts = ld.counts()
				for _, m := range c.members {
					if b, err := os.ReadFile(m.logPath); err == nil && strings.Contains(string(b), "WARNING: DATA RACE") {
						t.Errorf("%s: the race detector reported a data race, see %s", m.name, m.logPath)
					}
				}
				if t.Failed() {
					for _, m := range c.members {
						t.Logf("%s log (%s) ends:\n%s", m.name, m.logPath, m.tail(30))
					}
				}
			}()
			if err := ld.waitAcked(2*snapshotCount, 60*time.Second); err != nil {
				t.Fatal(err)
			}
			for r := range rounds {
				st.rounds++
				round(t, c, ld, st, r)
			}
		})
	}
	for _, p := range points {
		run(&stats{name: p.label()}, func(t *testing.T, c *cluster, ld *load, st *stats, r int) { crashRound(t, c, ld, p, st, r, rng) })
	}
	run(&stats{name: "tornTailAfterKill"}, func(t *testing.T, c *cluster, ld *load, st *stats, r int) { tearRound(t, c, ld, st, r, rng, false) })
	run(&stats{name: "tornUnsyncedWrite"}, func(t *testing.T, c *cluster, ld *load, st *stats, r int) { tearRound(t, c, ld, st, r, rng, true) })

	var acked int
	var failed int64
	for _, st := range all {
		acked += st.acked
		failed += st.failedPuts
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| point | rounds | kills | victim leader/follower | snapshots installed | WAL repairs | raft refused | acked puts checked | lost | phantom | HashKV agreed | time | result |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, st := range all {
		if st.rounds == 0 && !st.failed {
			continue // not selected by -run
		}
		result := "ok"
		if st.failed {
			result = "FAIL"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d/%d | %d | %d | %d | %d | %d | %d | %d/%d | %.1fs | %s |\n", st.name, st.rounds, st.kills,
			st.leader, st.follower, st.snapshots, st.repairs, st.refused, st.checked, st.lost, st.phantoms, st.hashAgree, st.rounds, st.took.Seconds(), result)
	}
	fmt.Fprintf(&b, "\nseed %d; %d puts acknowledged, %d failed (unknown outcome); total %.1fs\n", seed, acked, failed, time.Since(began).Seconds())
	t.Logf("summary:\n%s", b.String())
	if os.Getenv("CAIRN_CRASHPOINTS_DIR") != "" {
		os.WriteFile(filepath.Join(dir, "summary.md"), []byte(b.String()), 0o644)
	}
}

// pickVictim returns the leader in even rounds and a follower in odd ones.
func pickVictim(t *testing.T, c *cluster, st *stats, r int, rng *rand.Rand) *member {
	t.Helper()
	leader, followers, err := c.roles()
	if err != nil {
		t.Fatal(err)
	}
	if r%2 == 0 {
		st.leader++
		return leader
	}
	st.follower++
	return followers[rng.IntN(len(followers))]
}

// crashRound crashes one member at point p and checks the cluster after
// its restart.
func crashRound(t *testing.T, c *cluster, ld *load, p pointSpec, st *stats, r int, rng *rand.Rand) {
	v := pickVictim(t, c, st, r, rng)
	id, err := v.memberID()
	if err != nil {
		t.Fatal(err)
	}
	if err := v.stop(); err != nil {
		t.Fatal(err)
	}
	if p.catchUp {
		// Three snapshots' worth: the leader's log no longer reaches back
		// to where the victim stopped.
		if err := ld.burst(3 * snapshotCount); err != nil {
			t.Fatal(err)
		}
		if err := c.waitSendsFail(v, id); err != nil {
			t.Fatal(err)
		}
	}
	spec := fmt.Sprintf("%s=crash@%d", p.name, 1+rng.IntN(p.maxHit))
	if err := v.start(spec); err != nil {
		t.Fatal(err)
	}
	if p.defrag {
		if err := v.waitHealthy(60 * time.Second); err != nil {
			t.Fatal(err)
		}
		cli, err := v.client()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err = cli.Defragment(ctx, v.curl)
		cancel()
		cli.Close()
		if err == nil {
			t.Fatalf("round %d: %s: defragment succeeded with %s", r, v.name, spec)
		}
	}
	waitCrash(t, v, p.name, spec)
	st.kills++
	t.Logf("round %d: %s crashed at %s", r, v.name, spec)
	restartAndCheck(t, c, ld, v, st, r)
}

// waitCrash waits until v dies of the SIGKILL of the named point.
func waitCrash(t *testing.T, v *member, point, spec string) {
	t.Helper()
	ps, err := v.waitExit(60 * time.Second)
	if err != nil {
		v.kill()
		t.Fatalf("%s with %s: the point was not reached: %v; log ends:\n%s", v.name, spec, err, v.tail(30))
	}
	ws, _ := ps.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL || !strings.Contains(v.runLog(), "failpoint "+point+": crash") {
		t.Fatalf("%s with %s ended with %v, not at the crash point; log ends:\n%s", v.name, spec, ps, v.tail(30))
	}
}

// restartAndCheck starts v unarmed, waits until it is healthy and checks
// the cluster.
func restartAndCheck(t *testing.T, c *cluster, ld *load, v *member, st *stats, r int) {
	t.Helper()
	if err := tryRestartAndCheck(c, ld, v, st, r); err != nil {
		t.Fatal(err)
	}
	t.Logf("round %d: %s back; %d acknowledged puts on every member at revision %d, HashKV %s on each", r, v.name, st.checked, st.lastRev, st.lastHash)
}

func tryRestartAndCheck(c *cluster, ld *load, v *member, st *stats, r int) error {
	if err := v.start(""); err != nil {
		return err
	}
	defer func() {
		log := v.runLog()
		st.snapshots += strings.Count(log, "installed snapshot from the leader")
		st.repairs += strings.Count(log, "repaired torn wal tail")
	}()
	if err := v.waitHealthy(60 * time.Second); err != nil {
		return fmt.Errorf("round %d: %s does not come back: %w", r, v.name, err)
	}
	res := c.check(ld)
	st.checked, st.lastRev, st.lastHash = res.checked, res.rev, res.hashes[0]
	st.lost += res.lost
	st.phantoms += res.phantoms
	if res.hashesAgree() {
		st.hashAgree++
	}
	if !res.ok() {
		return fmt.Errorf("round %d: after %s restarted, at revision %d (%d acknowledged puts): %d lost, %d phantom, hashes %v:\n  %s\n%s log ends:\n%s",
			r, v.name, res.rev, res.checked, res.lost, res.phantoms, res.hashes, strings.Join(res.problems, "\n  "), v.name, v.tail(30))
	}
	return nil
}

// raftRefusal is how raft refuses a follower whose log lost entries it had
// acknowledged: the leader's heartbeat commits past the follower's log.
const raftRefusal = "Was the raft log corrupted, truncated, or lost?"

// tearRound kills a member and truncates its last WAL segment part way into
// one of its last frames. unsynced: the member is killed at walBeforeFsync
// and the cut is inside the last frame, which that unsynced write wrote (a
// power cut may tear it); else it is killed at a moment of the load and
// the cut is in one of the last three frames, which may have been synced
// and acknowledged to the leader (no power cut tears those; the leader and
// the third member still hold the entries).
func tearRound(t *testing.T, c *cluster, ld *load, st *stats, r int, rng *rand.Rand, unsynced bool) {
	v := pickVictim(t, c, st, r, rng)
	repairsBefore := st.repairs
	lastFrames := 3
	if unsynced {
		lastFrames = 1
		if err := v.stop(); err != nil {
			t.Fatal(err)
		}
		spec := fmt.Sprintf("walBeforeFsync=crash@%d", 1+rng.IntN(40))
		if err := v.start(spec); err != nil {
			t.Fatal(err)
		}
		waitCrash(t, v, "walBeforeFsync", spec)
	} else {
		if err := ld.waitAcked(20+rng.IntN(200), 30*time.Second); err != nil {
			t.Fatal(err)
		}
		v.kill()
	}
	st.kills++
	desc, err := tearWAL(filepath.Join(v.dataDir, "member", "wal"), lastFrames, rng)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("round %d: killed %s, tore its WAL: %s", r, v.name, desc)
	err = tryRestartAndCheck(c, ld, v, st, r)
	if err != nil && !unsynced && v.exitState() != nil && strings.Contains(v.runLog(), raftRefusal) {
		// The cut took entries the member had synced and acknowledged (no
		// power cut does that). While the leader that counted them leads,
		// raft stops the member; a new leader has no such count.
		st.refused++
		t.Logf("round %d: %s refused by raft (%q): the tear removed entries it had acknowledged; moving the leadership and restarting it", r, v.name, raftRefusal)
		if err := c.moveLeaderAwayFrom(v); err != nil {
			t.Fatal(err)
		}
		err = tryRestartAndCheck(c, ld, v, st, r)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("round %d: %s back; %d acknowledged puts on every member at revision %d, HashKV %s on each", r, v.name, st.checked, st.lastRev, st.lastHash)
	if st.repairs == repairsBefore {
		t.Errorf("round %d: %s did not log a WAL repair", r, v.name)
	}
}

// tearWAL truncates the last segment in dir at a random offset strictly
// inside one of its last n frames (never the crc and metadata frames that
// begin it).
func tearWAL(dir string, n int, rng *rand.Rand) (string, error) {
	segs, err := walfmt.ListSegments(dir)
	if err != nil {
		return "", err
	}
	if len(segs) == 0 {
		return "", fmt.Errorf("no WAL segment in %s", dir)
	}
	path := segs[len(segs)-1].Path
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var starts, sizes []int
	for off := 0; ; {
		_, size, err := walfmt.SplitFrame(b[off:])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s at %d: %w", path, off, err)
		}
		starts, sizes = append(starts, off), append(sizes, size)
		off += size
	}
	if len(starts) <= 2 {
		return "", fmt.Errorf("%s: no frame after the header", path)
	}
	first := max(2, len(starts)-n)
	i := first + rng.IntN(len(starts)-first)
	cut := int64(starts[i] + 1 + rng.IntN(sizes[i]-1))
	if err := os.Truncate(path, cut); err != nil {
		return "", err
	}
	end := starts[len(starts)-1] + sizes[len(sizes)-1]
	return fmt.Sprintf("%s cut at %d, inside frame %d of %d (bytes %d-%d); %d bytes of frames lost",
		filepath.Base(path), cut, i+1, len(starts), starts[i], starts[i]+sizes[i], int64(end)-cut), nil
}
