//go:build linux

package diskfaults

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/envdefault"
	"github.com/cairnkv/cairn/internal/faultfs"
)

// The power loss test's flags, each also read from an environment variable
// (scripts/powerloss.sh runs 200 rounds).
var (
	flagPowerLossSeed   = flag.Int64("powerloss.seed", envdefault.Int("POWERLOSS_SEED", 0), "seed of TestPowerLoss (0: random, printed)")
	flagPowerLossRounds = flag.Int("powerloss.rounds", int(envdefault.Int("POWERLOSS_ROUNDS", 3)), "rounds of TestPowerLoss")
	flagPowerLossServer = flag.String("powerloss.server", envdefault.String("POWERLOSS_SERVER", "cairn"), "server of TestPowerLoss: cairn or etcd")
)

// powerLossWorkers is how many clients put during a round, two per member;
// each puts at most powerLossMaxPuts keys a round.
const (
	powerLossWorkers = 6
	powerLossMaxPuts = 150
)

// ackedPut is a put that a member acknowledged.
type ackedPut struct {
	key, value string
	rev        int64
}

// powerLoss is the state of TestPowerLoss across its rounds.
type powerLoss struct {
	t     *testing.T
	c     *cluster
	seed  int64
	rnd   *rand.Rand
	clis  []*clientv3.Client // by member, kept across restarts
	acked []ackedPut         // every round's

	victims      [4]int // rounds by how many members lost power
	torn         int    // member power losses that kept a torn prefix
	unsynced     int    // files with unsynced changes at the power losses
	failedStarts int
	lost         int
}

// TestPowerLoss: three members, each with its data dir on its own faultfs
// mount, take puts from six clients. At a random point one, two or all
// three of them (all in about a quarter of the rounds) are killed with
// SIGKILL and lose power: the writes their disk had not synced are dropped,
// or a random prefix of them kept, the last one possibly torn. Restarted,
// every member must start (a torn WAL tail is cut, as etcd does), every
// acknowledged put must be there (a linearizable read of every member), and
// the members' HashKV must agree at a common revision. The rounds follow
// one another on the same cluster; a member that does not start or a lost
// put ends the test with the members' data dirs kept.
func TestPowerLoss(t *testing.T) {
	start := time.Now()
	seed := *flagPowerLossSeed
	if seed == 0 {
		seed = rand.Int64N(1 << 40)
	}
	bin, ok := binaries(t)[*flagPowerLossServer]
	if !ok {
		t.Fatalf("-powerloss.server %q: want cairn or etcd", *flagPowerLossServer)
	}
	rounds := *flagPowerLossRounds
	t.Logf("%s, seed %d, %d rounds (again: POWERLOSS_SEED=%d POWERLOSS_ROUNDS=%d go test ./e2e/diskfaults/ -run TestPowerLoss)",
		*flagPowerLossServer, seed, rounds, seed, rounds)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("failed with seed %d", seed)
		}
	})
	p := &powerLoss{t: t, c: startClusterOn(t, bin(t), 3), seed: seed, rnd: rand.New(rand.NewPCG(uint64(seed), 0x9013))}
	for _, m := range p.c.members {
		p.clis = append(p.clis, p.c.client(m))
	}
	done := 0
	for round := range rounds {
		if !p.round(round) {
			break
		}
		done++
	}
	if done == rounds {
		p.checkAcked("all rounds", p.acked)
	}
	repairs := 0
	for _, m := range p.c.members {
		b, _ := os.ReadFile(m.logPath)
		repairs += strings.Count(string(b), "repaired torn wal tail") // cairn's line
	}
	t.Logf("%d of %d rounds in %v: power lost by 1 member in %d rounds, 2 in %d, all 3 in %d; %d power losses kept a torn prefix, %d files had unsynced changes; %d puts acknowledged, %d lost; %d members did not start; %d WAL tails repaired at a start",
		done, rounds, time.Since(start).Round(time.Second), p.victims[1], p.victims[2], p.victims[3], p.torn, p.unsynced,
		len(p.acked), p.lost, p.failedStarts, repairs)
}

// round runs one round; false ends the test (it has failed).
func (p *powerLoss) round(round int) bool {
	t, c := p.t, p.c
	n := 1 + p.rnd.IntN(2)
	if p.rnd.IntN(4) == 0 {
		n = 3
	}
	order := p.rnd.Perm(3)
	victims := make([]*member, n)
	for i := range n {
		victims[i] = c.members[order[i]]
	}
	crashAfter := time.Duration(100+p.rnd.IntN(1500)) * time.Millisecond

	ctx, stopLoad := context.WithCancel(context.Background())
	var mu sync.Mutex
	var acked []ackedPut
	var wg sync.WaitGroup
	for w := range powerLossWorkers {
		cli := p.clis[w%3]
		wg.Go(func() {
			for i := range powerLossMaxPuts {
				key := fmt.Sprintf("pl/%04d/%d/%03d", round, w, i)
				value := fmt.Sprintf("%d-%s", p.seed, key)
				pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				resp, err := cli.Put(pctx, key, value)
				cancel()
				if ctx.Err() != nil {
					return
				}
				if err == nil {
					mu.Lock()
					acked = append(acked, ackedPut{key, value, resp.Header.Revision})
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(crashAfter) // the random point of the crash, under load
	var kwg sync.WaitGroup
	for _, m := range victims {
		kwg.Go(m.kill)
	}
	kwg.Wait()
	var modes []string
	for _, m := range victims {
		fs := p.mountOf(m)
		p.unsynced += fs.Unsynced()
		var r *rand.Rand
		mode := "unsynced dropped"
		if p.rnd.IntN(2) == 0 {
			r, mode = rand.New(rand.NewPCG(p.rnd.Uint64(), p.rnd.Uint64())), "torn prefix kept"
			p.torn++
		}
		if err := fs.PowerLoss(r); err != nil {
			t.Errorf("round %d: power loss of %s: %v", round, m.name, err)
			stopLoad()
			wg.Wait()
			return false
		}
		modes = append(modes, m.name+": "+mode)
	}
	stopLoad()
	wg.Wait()
	p.victims[n]++
	p.acked = append(p.acked, acked...)
	t.Logf("round %d: %d puts acknowledged, power lost after %v (%s)", round, len(acked), crashAfter, strings.Join(modes, ", "))

	for _, m := range victims {
		c.start(m)
	}
	for _, m := range victims {
		if err := p.waitServing(m, 30*time.Second); err != nil {
			p.failedStarts++
			p.keep(fmt.Sprintf("round %d", round), fmt.Sprintf("%s did not start after its power loss: %v", m.name, err))
			return false
		}
	}
	return p.checkAcked(fmt.Sprintf("round %d", round), acked) && p.checkHashKV(round)
}

// mountOf returns the mount of m's data dir (member i's is mount i).
func (p *powerLoss) mountOf(m *member) *faultfs.FS { return p.c.mounts[p.index(m)] }

// waitServing waits until m serves a linearizable read; it fails at once
// if m exits, with the end of its log.
func (p *powerLoss) waitServing(m *member, within time.Duration) error {
	cli := p.clis[p.index(m)]
	exited := m.exitedc()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "health")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("it exited; its log ends:\n%s", logTail(m, 3000))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not serving after %v: %v", within, err)
		}
		time.Sleep(100 * time.Millisecond) // polling a condition
	}
}

func (p *powerLoss) index(m *member) int {
	for i, o := range p.c.members {
		if o == m {
			return i
		}
	}
	panic("not a member: " + m.name)
}

// checkAcked reads the keys of the puts linearizably from every member and
// fails if one is missing or has another value.
func (p *powerLoss) checkAcked(what string, acked []ackedPut) bool {
	if len(acked) == 0 {
		return true
	}
	for i, m := range p.c.members {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := p.clis[i].Get(ctx, "pl/", clientv3.WithPrefix())
		cancel()
		if err != nil {
			p.keep(what, fmt.Sprintf("%s: linearizable read of %s: %v", what, m.name, err))
			return false
		}
		got := make(map[string]string, len(resp.Kvs))
		for _, kv := range resp.Kvs {
			got[string(kv.Key)] = string(kv.Value)
		}
		var lost []string
		for _, a := range acked {
			if got[a.key] != a.value {
				lost = append(lost, fmt.Sprintf("%s (acknowledged at revision %d)", a.key, a.rev))
			}
		}
		if len(lost) > 0 {
			p.lost += len(lost)
			p.keep(what, fmt.Sprintf("%s: %s lacks %d acknowledged puts: %v", what, m.name, len(lost), head(lost, 10)))
			return false
		}
	}
	return true
}

// checkHashKV compares the members' HashKV at the revision of a
// linearizable read, each once it has applied it.
func (p *powerLoss) checkHashKV(round int) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := p.clis[0].Get(ctx, "health")
	if err != nil {
		p.keep(fmt.Sprintf("round %d", round), fmt.Sprintf("round %d: revision for HashKV: %v", round, err))
		return false
	}
	rev := resp.Header.Revision
	var hashes []string
	var first *clientv3.HashKVResponse
	agree := true
	for i, m := range p.c.members {
		var h *clientv3.HashKVResponse
		for {
			h, err = p.clis[i].HashKV(ctx, m.curl, rev)
			if err == nil || ctx.Err() != nil {
				break
			}
			time.Sleep(100 * time.Millisecond) // until m has applied rev
		}
		if err != nil {
			p.keep(fmt.Sprintf("round %d", round), fmt.Sprintf("round %d: HashKV of %s at %d: %v", round, m.name, rev, err))
			return false
		}
		hashes = append(hashes, fmt.Sprintf("%s %d (compact revision %d)", m.name, h.Hash, h.CompactRevision))
		if first == nil {
			first = h
		} else if h.Hash != first.Hash || h.CompactRevision != first.CompactRevision {
			agree = false
		}
	}
	if !agree {
		p.keep(fmt.Sprintf("round %d", round), fmt.Sprintf("round %d: HashKV at revision %d disagree: %s", round, rev, strings.Join(hashes, ", ")))
		return false
	}
	return true
}

// keep fails the test with why, having stopped the members and copied
// their data dirs and logs to a folder that outlives the test.
func (p *powerLoss) keep(what, why string) {
	for _, m := range p.c.members {
		m.kill()
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("powerloss-seed%d-%s-%s", p.seed, strings.ReplaceAll(what, " ", ""), time.Now().UTC().Format("20060102T150405")))
	var errs []string
	for _, m := range p.c.members {
		fs := p.mountOf(m)
		if err := os.CopyFS(filepath.Join(dir, m.name), os.DirFS(filepath.Join(fs.Backing, m.name))); err != nil {
			errs = append(errs, err.Error())
		}
		if b, err := os.ReadFile(m.logPath); err == nil {
			os.WriteFile(filepath.Join(dir, m.name+".log"), b, 0o644)
		}
	}
	p.t.Errorf("%s\n  data dirs and logs kept in %s%s", why, dir, strings.Join(errs, "; "))
}

// logTail returns the last n bytes of m's log.
func logTail(m *member, n int) string {
	b, _ := os.ReadFile(m.logPath)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func head[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}
