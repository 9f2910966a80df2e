package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"time"
)

// faultKind names a fault the suite injects.
type faultKind string

const (
	faultKill          faultKind = "kill"           // SIGKILL, down 1-2 s, restart
	faultPause         faultKind = "pause"          // SIGSTOP 2-4 s, SIGCONT
	faultIsolate       faultKind = "isolate"        // blackhole every peer link of a member 5 s
	faultLeaderRestart faultKind = "leader-restart" // SIGTERM the leader, restart
	faultDrop          faultKind = "drop"           // close every peer connection of a member
	faultDelay         faultKind = "delay"          // hold every peer chunk of a member 30-150 ms, 3 s
)

var allFaults = []faultKind{faultKill, faultPause, faultIsolate, faultLeaderRestart, faultDrop, faultDelay}

// taggedFault is a kind of fault that a build tag adds (the failpoints
// tag: scenarios_failpoints.go). Like membership, such kinds are not in
// "all": ask for them with -faults.
type taggedFault struct {
	// plan draws what the fault needs from the schedule's random source:
	// its hold at least.
	plan func(rnd *rand.Rand, f *fault)
	// extra is what the fault takes beyond its hold.
	extra time.Duration
	// compactEvery, if not 0, is the compaction interval the runs with
	// this fault need at least.
	compactEvery time.Duration
	inject       func(ctx context.Context, c *cluster, m *member, f fault, rec *faultRecord) error
}

var taggedFaults = map[faultKind]taggedFault{}

// isolateHold is long enough for the isolated member to lose its leader and
// for require-leader watches on it to be cancelled (about three election
// timeouts after that, in etcd).
const isolateHold = 5 * time.Second

// gracefulTimeout is how long a member may take to exit on SIGTERM.
const gracefulTimeout = 10 * time.Second

// parseFaults reads -faults: kinds separated by commas, "all" for every
// kind but membership and the disk faults, "disk" for the disk faults.
func parseFaults(s string) ([]faultKind, error) {
	var out []faultKind
	add := func(ks ...faultKind) {
		for _, k := range ks {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	for _, f := range strings.Split(s, ",") {
		k := faultKind(strings.TrimSpace(f))
		switch _, tagged := taggedFaults[k]; {
		case k == "all" || k == "":
			add(allFaults...)
		case k == "disk":
			add(diskFaults...)
		case slices.Contains(allFaults, k), slices.Contains(diskFaults, k), k == faultMembership, tagged:
			add(k)
		default:
			return nil, fmt.Errorf("unknown fault %q (known: %v, %s, %v or disk; crashpoint and watchdelay with -tags failpoints)",
				k, allFaults, faultMembership, diskFaults)
		}
	}
	return out, nil
}

// fault is one step of the schedule.
type fault struct {
	Kind   faultKind     `json:"kind"`
	Member int           `json:"member"` // index; -1: the leader at the time (always for leader-restart)
	At     time.Duration `json:"at"`     // since the load started
	Hold   time.Duration `json:"hold"`
	Delay  time.Duration `json:"delay,omitempty"`
	Point  string        `json:"point,omitempty"` // a failpoint's name
	Hit    int           `json:"hit,omitempty"`   // the hit of Point that acts
	All    bool          `json:"all,omitempty"`   // power-loss: every member loses power
	// Torn, power-loss: when not 0, the seed of the random prefixes of
	// the unsynced writes that each member keeps (the last one possibly
	// torn); 0: they are all dropped.
	Torn uint64 `json:"torn,omitempty"`
}

// schedule lays out faults from the seed over [2 s, window): kinds in a
// shuffled cycle, those in first (not yet covered by earlier runs) first.
func schedule(seed int64, kinds, first []faultKind, window time.Duration) []fault {
	rnd := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	var order []faultKind
	for _, k := range first {
		if slices.Contains(kinds, k) {
			order = append(order, k)
		}
	}
	for len(order) < 64 {
		cycle := slices.Clone(kinds)
		rnd.Shuffle(len(cycle), func(i, j int) { cycle[i], cycle[j] = cycle[j], cycle[i] })
		order = append(order, cycle...)
	}
	var out []fault
	at := 2 * time.Second
	ms := func(lo, hi int) time.Duration { return randMS(rnd, lo, hi) }
	for _, k := range order {
		f := fault{Kind: k, Member: rnd.IntN(3), At: at}
		switch k {
		case faultKill:
			f.Hold = ms(1000, 2000)
		case faultPause:
			f.Hold = ms(2000, 4000)
		case faultIsolate:
			f.Hold = isolateHold
			if rnd.IntN(2) == 0 {
				f.Member = -1 // half the isolations are of the leader
			}
		case faultLeaderRestart:
			f.Hold, f.Member = ms(500, 1000), -1
		case faultDelay:
			f.Hold, f.Delay = 3*time.Second, ms(30, 150)
		case faultFsyncStall, faultDiskEIO, faultDiskFull, faultPowerLoss:
			planDisk(rnd, &f)
		}
		tagged, isTagged := taggedFaults[k]
		if isTagged {
			tagged.plan(rnd, &f)
		}
		// What a fault takes beyond its hold: a graceful stop, a restart,
		// the wait for a healthy cluster before the next one.
		extra := time.Second
		switch k {
		case faultLeaderRestart:
			extra = 5 * time.Second
		case faultKill, faultIsolate:
			extra = 2 * time.Second
		case faultMembership:
			extra = 10 * time.Second
		case faultFsyncStall, faultDiskEIO, faultDiskFull, faultPowerLoss:
			extra = diskExtra(f)
		}
		if isTagged {
			extra = tagged.extra
		}
		if f.At+f.Hold+extra > window {
			break
		}
		out = append(out, f)
		at = f.At + f.Hold + extra + ms(0, 1000)
	}
	return out
}

// randMS draws a duration of lo to hi milliseconds.
func randMS(rnd *rand.Rand, lo, hi int) time.Duration {
	return time.Duration(lo+rnd.IntN(hi-lo+1)) * time.Millisecond
}

// faultRecord is what happened when a fault ran.
type faultRecord struct {
	fault
	Target string `json:"target"`
	Start  int64  `json:"start"` // ns since the run started
	Heal   int64  `json:"heal"`  // when it was undone
	Note   string `json:"note,omitempty"`
	Err    string `json:"err,omitempty"`
	// Unhealthy lists the members that were not healthy 5 s after the heal.
	Unhealthy []string `json:"unhealthy,omitempty"`
	// Disk is what a disk-eio or disk-full fault did to its member.
	Disk *diskOutcome `json:"disk,omitempty"`
}

// runFaults injects the faults at their times; it stops early when ctx ends,
// always undoing the fault in progress, and leaves out the faults that an
// earlier slow one pushed past the end of the window.
func runFaults(ctx context.Context, c *cluster, h *history, faults []fault, window time.Duration, logf func(string, ...any)) []faultRecord {
	var recs []faultRecord
	base := time.Now()
	for _, f := range faults {
		if time.Since(base)+f.Hold > window {
			logf("fault %s and later ones left out: the window of %v is over", f.Kind, window)
			break
		}
		select {
		case <-ctx.Done():
			return recs
		case <-time.After(time.Until(base.Add(f.At))):
		}
		rec := inject(ctx, c, h, f)
		// The next fault waits for a healthy cluster, 5 s at most.
		rec.Unhealthy = c.waitHealthy(healthWithin-time.Duration(h.now()-rec.Heal), c.list()...)
		logf("fault %s on %s at %.1fs, held %v, healed at %.1fs%s%s%s", rec.Kind, rec.Target, float64(rec.Start)/1e9, rec.Hold, float64(rec.Heal)/1e9,
			prefixed(" note: ", rec.Note), prefixed(" error: ", rec.Err),
			prefixed(" unhealthy 5 s after the heal: ", strings.Join(rec.Unhealthy, ", ")))
		recs = append(recs, rec)
	}
	return recs
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// hold waits d, or until ctx ends.
func hold(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func inject(ctx context.Context, c *cluster, h *history, f fault) faultRecord {
	rec := faultRecord{fault: f, Start: h.now()}
	var m *member
	if f.Member >= 0 {
		m = c.list()[f.Member]
	} else if m, _ = c.leader(); m == nil {
		m = c.list()[int(f.At)%len(c.list())]
		rec.Note = "no leader found; the target is " + m.name
	}
	rec.Target = m.name
	var err error
	switch f.Kind {
	case faultKill:
		m.kill()
		hold(ctx, f.Hold)
		err = m.start()
	case faultPause:
		m.signal(syscall.SIGSTOP)
		hold(ctx, f.Hold)
		m.signal(syscall.SIGCONT)
	case faultIsolate:
		if lead, _ := c.leader(); f.Member < 0 || lead == m {
			rec.Note = "the leader"
		}
		for _, o := range c.list() {
			if o != m {
				c.net.Block(m.name, o.name, true)
			}
		}
		hold(ctx, f.Hold)
		for _, o := range c.list() {
			if o != m {
				c.net.Block(m.name, o.name, false)
			}
		}
	case faultLeaderRestart:
		if err = m.stopWith(syscall.SIGTERM, gracefulTimeout); err == nil {
			hold(ctx, f.Hold)
		}
		if serr := m.start(); serr != nil && err == nil {
			err = serr
		}
	case faultDrop:
		closed, open := c.net.Drop(m.name)
		rec.Note = fmt.Sprintf("%d of %d peer connections closed", closed, open)
	case faultDelay:
		c.net.SetDelay(m.name, f.Delay)
		hold(ctx, f.Hold)
		c.net.SetDelay(m.name, 0)
	case faultMembership:
		var old, nw *member
		old, nw, rec.Note, err = c.replaceMember(ctx)
		switch {
		case old != nil:
			rec.Target = old.name + "→" + nw.name
		case nw != nil:
			rec.Target = "→" + nw.name
		}
	case faultFsyncStall, faultDiskEIO, faultDiskFull, faultPowerLoss:
		err = injectDisk(ctx, c, h, m, f, &rec)
	default:
		if tf, ok := taggedFaults[f.Kind]; ok {
			err = tf.inject(ctx, c, m, f, &rec)
		}
	}
	if err != nil {
		rec.Err = err.Error()
	}
	rec.Heal = h.now()
	return rec
}
