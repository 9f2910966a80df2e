package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// failoverResult is what `failover` prints, as JSON.
type failoverResult struct {
	Signal string `json:"signal"`
	Leader string `json:"leader"` // the endpoint of the member signalled
	// RecoveryMS: from the signal to the first successful put that was
	// sent after it. GapMS: the longest time after the signal in which no
	// put succeeded. SlowestMS: the slowest put of those sent before the
	// signal and answered after it, or sent after it.
	RecoveryMS float64 `json:"recovery_ms"`
	GapMS      float64 `json:"gap_ms"`
	SlowestMS  float64 `json:"slowest_ms"`
	Acked      int     `json:"acked"`
	// Failed puts (their outcome unknown to the client), acknowledged
	// puts missing afterwards, and puts applied more than once.
	Failed     int `json:"failed"`
	Lost       int `json:"lost"`
	Duplicated int `json:"duplicated"`
	// FailedBy counts the failed puts by error text.
	FailedBy map[string]int `json:"failed_by,omitempty"`
}

// failover runs WRITERS writers that put keys of their own, one at a time,
// through one client of every endpoint (as a user's program would), finds
// the leader, sends it the signal, and measures how long writes take to
// succeed again. Afterwards it reads back every key from a surviving
// member: each acknowledged put must be there, applied once.
//
//	etcd-client-bench failover --endpoints A,B,C --pids PA,PB,PC --signal KILL
func failover(args []string) error {
	fs := flag.NewFlagSet("failover", flag.ContinueOnError)
	endpoints := fs.String("endpoints", "", "comma-separated endpoints of the members")
	pids := fs.String("pids", "", "comma-separated process IDs of the members, in the order of --endpoints")
	sigName := fs.String("signal", "KILL", "KILL or TERM")
	writers := fs.Int("writers", 20, "concurrent writers")
	before := fs.Duration("before", 2*time.Second, "writes before the signal")
	after := fs.Duration("after", 3*time.Second, "writes after the first success that follows the signal")
	timeout := fs.Duration("request-timeout", 5*time.Second, "timeout of each put")
	if err := fs.Parse(args); err != nil {
		return err
	}
	eps := strings.Split(*endpoints, ",")
	pidList := strings.Split(*pids, ",")
	if len(eps) != len(pidList) || len(eps) < 2 {
		return errors.New("failover: --endpoints and --pids must name the same members, at least two")
	}
	sig := map[string]syscall.Signal{"KILL": syscall.SIGKILL, "TERM": syscall.SIGTERM}[*sigName]
	if sig == 0 {
		return fmt.Errorf("failover: unknown signal %q", *sigName)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()

	type put struct {
		start, end time.Time
		ok         bool
	}
	var (
		mu        sync.Mutex
		acked     []string
		puts      []put
		failed    int
		failedBy  = map[string]int{}
		signalled time.Time // zero until the signal is sent
		recovered time.Time // the first success sent after it
	)
	recoveredc := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < *writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("failover/%02d/%08d", w, seq)
				mu.Lock()
				sentAfter := !signalled.IsZero()
				mu.Unlock()
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), *timeout)
				_, err := cli.Put(ctx, key, strconv.Itoa(seq))
				cancel()
				now := time.Now()
				mu.Lock()
				puts = append(puts, put{start, now, err == nil})
				if err != nil {
					failed++
					failedBy[err.Error()]++
				} else {
					acked = append(acked, key)
					if sentAfter && recovered.IsZero() {
						recovered = now
						close(recoveredc)
					}
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(10 * time.Millisecond) // as a client would before retrying
				}
			}
		}(w)
	}

	time.Sleep(*before)
	leader, err := findLeader(cli, eps)
	if err != nil {
		close(stop)
		wg.Wait()
		return err
	}
	pid, err := strconv.Atoi(pidList[leader])
	if err != nil {
		close(stop)
		wg.Wait()
		return err
	}
	mu.Lock()
	signalled = time.Now()
	mu.Unlock()
	if err := syscall.Kill(pid, sig); err != nil {
		close(stop)
		wg.Wait()
		return err
	}
	select {
	case <-recoveredc:
	case <-time.After(30 * time.Second):
	}
	time.Sleep(*after)
	close(stop)
	wg.Wait()

	res := failoverResult{Signal: *sigName, Leader: eps[leader], Acked: len(acked), Failed: failed, FailedBy: failedBy}
	if !recovered.IsZero() {
		res.RecoveryMS = ms(recovered.Sub(signalled))
	} else {
		res.RecoveryMS = -1
	}
	last := signalled
	var slowest time.Duration
	sort.Slice(puts, func(i, j int) bool { return puts[i].end.Before(puts[j].end) })
	for _, p := range puts {
		if p.end.Before(signalled) {
			continue
		}
		slowest = max(slowest, p.end.Sub(p.start))
		if p.ok {
			res.GapMS = max(res.GapMS, ms(p.end.Sub(last)))
			last = p.end
		}
	}
	res.SlowestMS = ms(slowest)
	var survivors []string
	for i, ep := range eps {
		if i != leader {
			survivors = append(survivors, ep)
		}
	}
	res.Lost, res.Duplicated, err = checkFailoverKeys(survivors, acked)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// findLeader returns the index of the endpoint whose member leads.
func findLeader(cli *clientv3.Client, eps []string) (int, error) {
	for i, ep := range eps {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		if err == nil && st.Leader == st.Header.MemberId {
			return i, nil
		}
	}
	return 0, errors.New("failover: no member says it leads")
}

// checkFailoverKeys reads every failover key from the survivors and counts
// the acknowledged keys missing and the keys written more than once.
func checkFailoverKeys(survivors, acked []string) (lost, duplicated int, err error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: survivors, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, 0, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "failover/", clientv3.WithPrefix())
	if err != nil {
		return 0, 0, err
	}
	present := make(map[string]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		present[string(kv.Key)] = true
		if kv.Version > 1 {
			duplicated++
		}
	}
	for _, k := range acked {
		if !present[k] {
			lost++
		}
	}
	return lost, duplicated, nil
}
