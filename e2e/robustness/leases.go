package robustness

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// keptTTL is the TTL of the leases the keepers keep alive: short, so that a
// lease revoked while its keep-alives were answered shows within a run.
const keptTTL = 5

// keepAliveMargin is how much shorter than the TTL a gap between two
// keep-alive answers must be for the stream to count as healthy: it covers
// the time from the leader's renewal to the answer's arrival.
const keepAliveMargin = time.Second

// keeperIDBase numbers the keepers' workers after the load's, so that
// their values stay unique.
const keeperIDBase = 1000

// keptLease is the life of one lease a keeper kept alive.
type keptLease struct {
	Member  string  `json:"member"` // the member the keeper's client is pinned to
	ID      int64   `json:"id"`
	Key     string  `json:"key"`
	TTL     int64   `json:"ttl"`     // seconds
	Granted int64   `json:"granted"` // when the grant was asked for, ns since the run started
	Answers []int64 `json:"answers"` // when each keep-alive answer arrived
	// Lost is the first evidence that the lease was gone (0: it lived):
	// its key's delete in a watch, or TimeToLive finding no lease.
	Lost    int64  `json:"lost,omitempty"`
	LostHow string `json:"lost_how,omitempty"`
}

// lose records evidence, at time at, that the lease was gone; the
// earliest counts.
func (l *keptLease) lose(at int64, how string) {
	if l.Lost == 0 || at < l.Lost {
		l.Lost, l.LostHow = at, how
	}
}

// keeper grants a lease through one member, puts a key with it (a put of
// the history, which the model follows) and keeps it alive through that
// member for the whole run; a lease it finds gone is replaced by a new one
// with a new key while the load lasts.
type keeper struct {
	m *member
	w *worker // records the puts in the history

	mu     sync.Mutex
	leases []*keptLease
}

// startKeepers starts a keeper on every member; grants and puts end with
// loadCtx, keep-alives with ctx.
func startKeepers(ctx, loadCtx context.Context, c *cluster, h *history, wg *sync.WaitGroup) ([]*keeper, error) {
	var ks []*keeper
	for i, m := range c.list() {
		cli, err := c.client(m)
		if err != nil {
			return nil, err
		}
		k := &keeper{m: m, w: &worker{id: keeperIDBase + i, cli: cli, endpoint: m.name, h: h, client: h.newClient(), modRev: map[string]int64{}}}
		ks = append(ks, k)
		wg.Go(func() {
			defer cli.Close()
			k.run(ctx, loadCtx)
		})
	}
	return ks, nil
}

func (k *keeper) run(ctx, loadCtx context.Context) {
	h := k.w.h
	var cur *keptLease
	for ctx.Err() == nil {
		if cur == nil {
			if loadCtx.Err() != nil {
				<-ctx.Done() // no new lease once the load is over
				return
			}
			cur = k.grant(loadCtx)
			if cur == nil {
				hold(ctx, 200*time.Millisecond)
				continue
			}
		}
		kctx, cancel := context.WithCancel(ctx)
		ch, err := k.w.cli.KeepAlive(kctx, clientv3.LeaseID(cur.ID))
		if err == nil {
			for range ch {
				k.mu.Lock()
				cur.Answers = append(cur.Answers, h.now())
				k.mu.Unlock()
			}
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		// The channel closed: the lease is gone, or no answer came for a
		// TTL (the member is down or cut off); ask again, or start anew.
		if k.gone(ctx, cur) {
			cur = nil
		}
		hold(ctx, 200*time.Millisecond)
	}
}

// grant grants a lease and puts a new key with it; nil if the grant failed.
func (k *keeper) grant(ctx context.Context) *keptLease {
	h := k.w.h
	at := h.now()
	gctx, cancel := context.WithTimeout(ctx, opTimeout)
	resp, err := k.w.cli.Grant(gctx, keptTTL)
	cancel()
	if err != nil {
		return nil
	}
	k.mu.Lock()
	l := &keptLease{Member: k.m.name, ID: int64(resp.ID), Key: fmt.Sprintf("%slease-%s-%d", keyPrefix, k.m.name, len(k.leases)),
		TTL: keptTTL, Granted: at}
	k.leases = append(k.leases, l)
	k.mu.Unlock()
	k.w.do(ctx, input{Kind: opPut, Key: l.Key, Value: k.w.value(), Lease: l.ID})
	return l
}

// gone asks the keeper's member whether the lease still lives, and records
// its loss if not.
func (k *keeper) gone(ctx context.Context, l *keptLease) bool {
	tctx, cancel := context.WithTimeout(ctx, opTimeout)
	resp, err := k.w.cli.TimeToLive(tctx, clientv3.LeaseID(l.ID))
	cancel()
	if err != nil || resp.TTL != -1 {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	l.lose(k.w.h.now(), fmt.Sprintf("TimeToLive through %s found no lease", k.m.name))
	return true
}

// askKeptLeasesAtEnd asks, through every member, whether each keeper's last lease
// still lives (at the end of the run, with every member healthy).
func askKeptLeasesAtEnd(c *cluster, ks []*keeper) {
	cli, err := c.client(c.list()...)
	if err != nil {
		return
	}
	defer cli.Close()
	for _, k := range ks {
		k.mu.Lock()
		var last *keptLease
		if len(k.leases) > 0 {
			last = k.leases[len(k.leases)-1]
		}
		k.mu.Unlock()
		if last == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		resp, err := cli.TimeToLive(ctx, clientv3.LeaseID(last.ID))
		cancel()
		if err == nil && resp.TTL == -1 {
			k.mu.Lock()
			last.lose(k.w.h.now(), "TimeToLive at the end of the run found no lease")
			k.mu.Unlock()
		}
	}
}

// keptLeases returns every keeper's leases, each lost at the first
// evidence: its own, the delete of its key in a watcher's response, or
// in the final history (at end, when no watcher saw it).
func keptLeases(ks []*keeper, watchers []*watcher, final *finalHistory, end int64) []keptLease {
	deleted := map[string]int64{} // key → when a watcher first received its delete
	for _, w := range watchers {
		w.mu.Lock()
		for _, r := range w.Resps {
			for _, e := range r.Events {
				if e.Delete && (deleted[e.Key] == 0 || r.At < deleted[e.Key]) {
					deleted[e.Key] = r.At
				}
			}
		}
		w.mu.Unlock()
	}
	inFinal := map[string]bool{}
	if final != nil {
		for _, evs := range final.Events {
			for _, e := range evs {
				if e.Delete {
					inFinal[e.Key] = true
				}
			}
		}
	}
	var out []keptLease
	for _, k := range ks {
		k.mu.Lock()
		for _, l := range k.leases {
			c := *l
			c.Answers = slices.Clone(l.Answers)
			if at := deleted[c.Key]; at != 0 {
				c.lose(at, "a watcher received the delete of its key")
			} else if inFinal[c.Key] {
				c.lose(end, "the final history deletes its key")
			}
			out = append(out, c)
		}
		k.mu.Unlock()
	}
	return out
}

// expiryOps are the expiries of the kept leases as revokes of unknown
// outcome, open from the grant: porcupineOps resolves each to the revision
// that deleted the lease's key, if one did, and leaves it out if not; the
// model then explains a lease that ran out as the load's revokes.
func expiryOps(leases []keptLease, h *history) []op {
	var out []op
	for _, l := range leases {
		out = append(out, op{Client: h.newClient(), Worker: -1, Endpoint: l.Member, In: input{Kind: opRevoke, Lease: l.ID},
			Out: output{Unknown: true, Err: "kept lease expired"}, Call: l.Granted, Return: math.MaxInt64})
	}
	return out
}

// wronglyRevoked lists the kept leases lost while they should have lived.
// A lease runs out a TTL after its last renewal, and the leader renews it
// before it answers a keep-alive; so a lease is judged by the stretch from
// its last answer (or its grant, or the start of a fault on its member that
// held that answer back) to its loss. Its loss is wrong if that
// stretch is shorter than the TTL less keepAliveMargin (a renewal promised
// it more), or if no fault touched its member in that stretch (the member
// could reach a quorum, and kept forwarding its keep-alives). A fault
// touches its members from its start to healthWithin after its heal; a
// removed member, for good.
func wronglyRevoked(leases []keptLease, recs []faultRecord) []string {
	var bad []string
	for _, l := range leases {
		if l.Lost == 0 {
			continue
		}
		last, answered := l.Granted, 0
		for _, a := range l.Answers {
			if a <= l.Lost {
				last, answered = a, answered+1
			}
		}
		// An answer that arrives during a fault on its member, or just after,
		// may carry a renewal made before it (held by a paused member).
		renewed := last
		for _, rec := range recs {
			if names, _ := faultedMembers(rec); slices.Contains(names, l.Member) && rec.Start <= last && last <= rec.Heal+int64(keepAliveMargin) {
				renewed = min(renewed, rec.Start)
			}
		}
		gap := time.Duration(l.Lost - renewed)
		healthy := gap <= time.Duration(l.TTL)*time.Second-keepAliveMargin
		var touched []string
		for _, rec := range recs {
			names, open := faultedMembers(rec)
			until := rec.Heal + int64(healthWithin)
			if open {
				until = math.MaxInt64
			}
			if slices.Contains(names, l.Member) && rec.Start <= l.Lost && until >= last {
				touched = append(touched, fmt.Sprintf("%s at %.1fs", rec.Kind, float64(rec.Start)/1e9))
			}
		}
		if !healthy && len(touched) > 0 {
			continue
		}
		why := fmt.Sprintf("no fault touched %s from %.1fs", l.Member, float64(last)/1e9)
		if healthy {
			why = fmt.Sprintf("the last keep-alive answer came %v before", gap.Round(time.Millisecond))
			if len(touched) > 0 {
				why += " (faults on " + l.Member + ": " + strings.Join(touched, ", ") + ")"
			}
		}
		bad = append(bad, fmt.Sprintf("lease %x (TTL %ds, key %s) kept alive through %s from %.1fs, %d answers, lost at %.1fs (%s): %s",
			l.ID, l.TTL, l.Key, l.Member, float64(l.Granted)/1e9, answered, float64(l.Lost)/1e9, l.LostHow, why))
	}
	return bad
}

// faultedMembers names the members a fault record acted on: its target,
// every member of a power loss of all of them, the removed member of a
// membership change (which is gone from then on: open tells so).
func faultedMembers(rec faultRecord) (names []string, open bool) {
	if rec.Kind == faultMembership {
		old, _, _ := strings.Cut(rec.Target, "→")
		if old == "" {
			return nil, false
		}
		return []string{old}, true
	}
	return strings.Split(rec.Target, ","), false
}

// frozenLeaderWindow is how soon after a frozen member resumes a lease it
// revokes is lost: its lessor acts at once, and the revoke takes a round
// trip to commit.
const frozenLeaderWindow = 2 * time.Second

// frozenLeaderRevoke finds the fault behind a lease defect etcd 3.7.3 is
// known to have (etcd-io/etcd#15247, #12528): a leader frozen by a pause or
// a stalled fsync, replaced meanwhile, still counts itself the leader when
// it resumes; its lessor finds expired the leases whose renewals went to the
// new leader, and their revokes are committed. A lease lost within
// frozenLeaderWindow after such a fault ended, on any member, matches.
func frozenLeaderRevoke(l keptLease, recs []faultRecord) (faultRecord, bool) {
	for _, rec := range recs {
		if rec.Kind != faultPause && rec.Kind != faultFsyncStall {
			continue
		}
		if rec.Heal <= l.Lost && l.Lost-rec.Heal <= int64(frozenLeaderWindow) {
			return rec, true
		}
	}
	return faultRecord{}, false
}
