//go:build failpoints

package crashpoints

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Every key the load writes is new: load/<writer>/<seq>, with a value that
// follows from the key. A member must hold every key whose put was
// acknowledged, at the revision the put returned, and no key that was never
// put.
const (
	keyPrefix = "load/"
	writers   = 3
	// burstWriter is the writer number of the puts burst makes.
	burstWriter = writers
)

func loadKey(writer int, seq int64) string { return fmt.Sprintf("%s%d/%09d", keyPrefix, writer, seq) }

func loadValue(key string) string { return "value-of-" + key }

// parseLoadKey returns the writer and sequence number of a load key.
func parseLoadKey(key string) (int, int64, bool) {
	w, s, ok := strings.Cut(strings.TrimPrefix(key, keyPrefix), "/")
	if !ok {
		return 0, 0, false
	}
	wi, err1 := strconv.Atoi(w)
	si, err2 := strconv.ParseInt(s, 10, 64)
	return wi, si, err1 == nil && err2 == nil && wi >= 0 && wi <= burstWriter
}

// load writes at a bounded rate through a client of every member, and
// records what was acknowledged.
type load struct {
	cli *clientv3.Client

	seqs [writers + 1]atomic.Int64 // the last sequence number each writer tried

	mu      sync.Mutex
	acked   map[string]int64 // key -> revision its put returned
	maxRev  int64
	failed  int64
	changed chan struct{} // closed and replaced on each acknowledgement

	stop chan struct{}
	wg   sync.WaitGroup
}

func startLoad(endpoints []string, perSecond int) (*load, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	l := &load{cli: cli, acked: map[string]int64{}, changed: make(chan struct{}), stop: make(chan struct{})}
	tokens := make(chan struct{}, writers)
	l.wg.Add(1)
	go func() { // the rate: one put per tick, across the writers
		defer l.wg.Done()
		tick := time.NewTicker(time.Second / time.Duration(perSecond))
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
				select {
				case tokens <- struct{}{}:
				default: // the writers are behind: the rate is a ceiling
				}
			}
		}
	}()
	for w := range writers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stop:
					return
				case <-tokens:
				}
				l.put(w)
			}
		}()
	}
	return l, nil
}

// put writes the writer's next key and records the outcome.
func (l *load) put(w int) bool {
	key := loadKey(w, l.seqs[w].Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	resp, err := l.cli.Put(ctx, key, loadValue(key))
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failed++
		return false
	}
	rev := resp.Header.Revision
	l.acked[key] = rev
	l.maxRev = max(l.maxRev, rev)
	close(l.changed)
	l.changed = make(chan struct{})
	return true
}

// burst makes n more acknowledged puts as fast as 8 writers go.
func (l *load) burst(n int) error {
	var left atomic.Int64
	left.Store(int64(n))
	var failures atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				for !l.put(burstWriter) {
					if failures.Add(1) > int64(n) {
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if f := failures.Load(); f > int64(n) {
		return fmt.Errorf("burst of %d puts: %d failed", n, f)
	}
	return nil
}

// snapshot returns a copy of the acknowledged puts, the highest revision
// among them, and the last sequence number each writer tried.
func (l *load) snapshot() (map[string]int64, int64, [writers + 1]int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	acked := make(map[string]int64, len(l.acked))
	for k, v := range l.acked {
		acked[k] = v
	}
	var tried [writers + 1]int64
	for i := range tried {
		tried[i] = l.seqs[i].Load()
	}
	return acked, l.maxRev, tried
}

func (l *load) counts() (acked int, failed int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked), l.failed
}

// waitAcked waits until n more puts than now have been acknowledged.
func (l *load) waitAcked(n int, timeout time.Duration) error {
	deadline := time.After(timeout)
	l.mu.Lock()
	target := len(l.acked) + n
	l.mu.Unlock()
	for {
		l.mu.Lock()
		got, changed := len(l.acked), l.changed
		l.mu.Unlock()
		if got >= target {
			return nil
		}
		select {
		case <-changed:
		case <-deadline:
			return fmt.Errorf("%d of %d more puts acknowledged within %v", got-target+n, n, timeout)
		}
	}
}

func (l *load) close() {
	close(l.stop)
	l.wg.Wait()
	l.cli.Close()
}
