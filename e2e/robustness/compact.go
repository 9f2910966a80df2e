package robustness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/pkg/store"
)

// compactor compacts the store, on a schedule or when a fault asks, at the
// revision it has read the history up to: before each compaction it reads
// the events that compaction makes unreadable, so that the final history
// is still whole (the final read watches from after the last compaction).
type compactor struct {
	c *cluster

	mu     sync.Mutex
	events map[int64][]event // every event up to read
	// read is the revision the events are read up to; a compaction is at
	// or below it, even one whose outcome is unknown.
	read int64
	rev  int64 // the last acknowledged compaction's revision (0: none yet)
	done int   // compactions acknowledged
}

func newCompactor(c *cluster) *compactor {
	return &compactor{c: c, events: map[int64][]event{}}
}

// run compacts every interval until ctx ends; a compaction that fails (a
// fault in progress) is tried again at the next tick.
func (k *compactor) run(ctx context.Context, interval time.Duration, logf func(string, ...any)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := k.compact(ctx); err != nil && ctx.Err() == nil {
			logf("compaction: %v", err)
		}
	}
}

// compact reads the events since the last compaction up to the current
// revision, then compacts at that revision, which it returns.
func (k *compactor) compact(ctx context.Context) (int64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	cli, err := k.c.client(k.c.list()...)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, keyPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("current revision: %w", err)
	}
	rev := resp.Header.Revision
	if rev <= k.read {
		return k.rev, nil
	}
	if err := readEvents(ctx, cli, k.read+1, rev, k.events); err != nil {
		return 0, err
	}
	k.read = rev
	if _, err := cli.Compact(ctx, rev); err != nil {
		return 0, fmt.Errorf("compact at %d: %w", rev, err)
	}
	k.rev = rev
	k.done++
	return rev, nil
}

// history returns the events read so far, the revision they are read up
// to, the last acknowledged compaction's revision and the number of
// compactions acknowledged.
func (k *compactor) history() (events map[int64][]event, read, rev int64, done int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.events), k.read, k.rev, k.done
}

// readEvents adds the events of revisions from..to under keyPrefix to into,
// read with a watch.
func readEvents(ctx context.Context, cli *clientv3.Client, from, to int64, into map[int64][]event) error {
	if from > to {
		return nil
	}
	last := from - 1
	for wr := range cli.Watch(ctx, keyPrefix, clientv3.WithPrefix(), clientv3.WithRev(from)) {
		if err := wr.Err(); err != nil {
			return fmt.Errorf("events %d..%d: %w", from, to, err)
		}
		for _, e := range wr.Events {
			if e.Kv.ModRevision > to {
				return nil
			}
			ev := event{Rev: e.Kv.ModRevision, Key: string(e.Kv.Key), Delete: e.Type == clientv3.EventTypeDelete}
			if !ev.Delete {
				ev.Value, ev.Lease = string(e.Kv.Value), e.Kv.Lease
			}
			into[ev.Rev] = append(into[ev.Rev], ev)
			last = max(last, ev.Rev)
		}
		if last >= to {
			return nil
		}
	}
	return fmt.Errorf("events %d..%d: the watch ended at %d: %w", from, to, last, ctx.Err())
}

// compactionState reads the compaction revisions that a stopped member's
// db records: the scheduled one and the finished one (0 if none).
func compactionState(dataDir string) (scheduled, finished int64, err error) {
	db, err := bolt.Open(filepath.Join(dataDir, "member", "snap", "db"), 0o400, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(store.BucketMeta)
		if meta == nil {
			return errors.New("no meta bucket")
		}
		read := func(key []byte) (int64, error) {
			v := meta.Get(key)
			if v == nil {
				return 0, nil
			}
			r, _, err := store.ParseRevisionKey(v)
			return r.Main, err
		}
		if scheduled, err = read(store.MetaScheduledCompactRev); err != nil {
			return err
		}
		finished, err = read(store.MetaFinishedCompactRev)
		return err
	})
	return scheduled, finished, err
}
