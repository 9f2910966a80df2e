package store

import (
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/pkg/failpoint"
)

// Compact schedules a compaction at rev: reads below rev fail with
// ErrCompacted from now on, the index forgets what they needed, and the
// superseded revisions leave the backend in the background, in bounded
// batches. The returned channel closes when they are gone.
func (w *WriteTxn) Compact(rev int64) (<-chan struct{}, error) {
	s := w.s
	if w.err != nil {
		return nil, w.err
	}
	if rev > w.Rev() {
		return nil, ErrFutureRev
	}
	// Only writers move the compaction, and w is the one writer now: the
	// compact revision and the index stay as read here until s.mu is taken.
	prev := s.CompactRev()
	// 0 is a revision like the others: on a store never compacted (no
	// compaction scheduled yet), etcd 3.7.3 takes a compaction there, once.
	if rev < prev || rev == prev && (rev > 0 || w.wt.Get(BucketMeta, MetaScheduledCompactRev) != nil) {
		return nil, ErrCompacted
	}
	// Once the read transactions open now have ended, every read below
	// rev is refused: the compactor then compacts the index, a batch of
	// keys at a time, and the backend, without holding up the writes (etcd
	// compacts its index in a job of its own, too).
	s.mu.Lock()
	s.compactRev = rev
	s.mu.Unlock()
	if err := w.wt.Put(BucketMeta, MetaScheduledCompactRev, RevisionKey(Revision{Main: rev}, false)); err != nil {
		w.err = err
		return nil, err
	}
	s.watch.compacted(rev)
	return s.compactor.enqueue(compactionJob{rev: rev, prevRev: prev}), nil
}

// indexCompactionBatch is how many keys of the index a compaction handles
// under one hold of the index's lock: a few milliseconds.
const indexCompactionBatch = 10000

// compactIndex prepares job's hasher (HashKV(job.rev) is to answer from
// then on what it answers before the compaction) and compacts the index, a
// batch of keys at a time. It collects nothing per key: the backend's
// compaction then asks the index, entry by entry, which revision each key
// holds at job.rev, which a compaction of the index leaves as it was.
func (c *compactor) compactIndex(job *compactionJob) error {
	s := c.s
	began := time.Now()
	job.hasher = newKVHasher(s.index.RetainsAny(job.prevRev, indexCompactionBatch), job.prevRev, job.rev)
	for from := []byte{}; from != nil; {
		if c.stopped() {
			return errCompactionStopped
		}
		from = s.index.CompactBatch(job.rev, from, indexCompactionBatch)
	}
	since(s.stats.OnIndexCompaction, began)
	return nil
}

func (c *compactor) stopped() bool {
	select {
	case <-c.quit:
		return true
	default:
		return false
	}
}

// compactor removes compacted revisions from the backend, one compaction
// after another, in a goroutine of its own.
type compactor struct {
	s     *Store
	quit  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	queue []compactionJob
	wake  chan struct{}
	// resumed closes when the compaction resumed at open is done (nil if none).
	resumed <-chan struct{}
}

type compactionJob struct {
	rev     int64
	prevRev int64 // the compaction before this one (0: none)
	// resumed tells a compaction resumed at open, whose index the open
	// compacted already.
	resumed bool
	// hasher computes HashKV(rev) as it was before the compaction; nil
	// when that is not known (a compaction resumed at open).
	hasher *kvHasher
	done   chan struct{}
}

func newCompactor(s *Store) *compactor {
	c := &compactor{s: s, quit: make(chan struct{}), wake: make(chan struct{}, 1)}
	c.wg.Add(1)
	go c.run()
	return c
}

// resume finishes a compaction that was scheduled but not finished when the
// store last closed.
func (c *compactor) resume() error {
	rt := c.s.b.Read()
	finished, err := c.s.readCompactRev(rt, MetaFinishedCompactRev)
	rt.Close()
	if err != nil {
		return err
	}
	if scheduled := c.s.CompactRev(); scheduled > finished {
		c.resumed = c.enqueue(compactionJob{rev: scheduled, prevRev: finished, resumed: true})
	}
	return nil
}

func (c *compactor) enqueue(job compactionJob) <-chan struct{} {
	job.done = make(chan struct{})
	c.mu.Lock()
	c.queue = append(c.queue, job)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return job.done
}

func (c *compactor) run() {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		var job *compactionJob
		if len(c.queue) > 0 {
			job = &c.queue[0]
			c.queue = c.queue[1:]
		}
		c.mu.Unlock()
		if job == nil {
			select {
			case <-c.quit:
				return
			case <-c.wake:
				continue
			}
		}
		if err := c.compact(*job); err != nil {
			if err != errCompactionStopped {
				c.s.log.Error("compaction failed", "rev", job.rev, "err", err)
			}
			return
		}
		close(job.done)
	}
}

var errCompactionStopped = fmt.Errorf("compaction stopped")

// compact deletes the revisions at or before job.rev that do not hold their
// key's value there, a batch at a time, then records the compaction as
// finished. A tombstone at job.rev itself stays (until the next
// compaction), as in etcd since its issue 18089: reads and watches at
// job.rev are allowed, and a watch that starts there must see that delete.
// On the way it hashes the revisions for HashKV(job.rev), before any of
// them is deleted. Each batch is read, and its fate asked of the index,
// in a read transaction; the write transaction only deletes.
func (c *compactor) compact(job compactionJob) error {
	s := c.s
	if !job.resumed {
		if err := c.compactIndex(&job); err != nil {
			return err
		}
	}
	start := RevisionKey(Revision{}, false)
	end := RevisionKey(Revision{Main: job.rev + 1}, false)
	pause := time.NewTimer(0)
	defer pause.Stop()
	began := time.Now()
	var kv mvccpb.KeyValue
	var doomed [][]byte
	for {
		select {
		case <-c.quit:
			return errCompactionStopped
		case <-pause.C:
		}
		batchStart := time.Now()
		doomed = doomed[:0]
		scanned := 0
		var last []byte
		rt := s.b.Read()
		err := rt.Range(BucketKey, start, end, func(k, v []byte) bool {
			scanned++
			last = append(last[:0], k...)
			rev, tomb, perr := ParseRevisionKey(k)
			if perr != nil {
				job.hasher = nil // HashKV(job.rev) will meet the same key and fail
				return scanned < s.cfg.CompactionBatchLimit
			}
			// An entry whose value does not decode stays, and leaves
			// HashKV(job.rev) unknown.
			live, lerr := liveAt(s.index, rev, v, job.rev, &kv)
			if job.hasher != nil && (lerr != nil || job.hasher.write(k, v, func(Revision) (bool, error) { return live, nil }) != nil) {
				job.hasher = nil
			}
			if lerr == nil && !live && !(tomb && rev.Main == job.rev) {
				doomed = append(doomed, append([]byte(nil), k...))
			}
			return scanned < s.cfg.CompactionBatchLimit
		})
		rt.Close()
		finished := scanned < s.cfg.CompactionBatchLimit
		if err == nil && (len(doomed) > 0 || finished) {
			err = c.deleteBatch(doomed, finished, job.rev)
		}
		since(s.stats.OnCompactionBatch, batchStart)
		if err != nil {
			return fmt.Errorf("compact at %d: %w", job.rev, err)
		}
		s.stats.CompactedKeys.Add(int64(len(doomed)))
		if finished {
			failpoint.Hit("compactAfterSetFinishedCompact")
			since(s.stats.OnCompaction, began)
			s.stats.LastCompaction.Store(time.Now().Unix())
			if job.hasher != nil {
				s.compactionHashes.add(KVHash{Hash: job.hasher.sum(), HashRevision: job.rev, CompactRevision: reportedCompactRev(job.prevRev)})
			}
			// etcd's line, which tools and etcd's own tests wait for
			s.log.Info("finished scheduled compaction", "compact-revision", job.rev, "took", time.Since(began).String())
			return nil
		}
		start = append(append([]byte(nil), last...), 0) // the key right after the last one scanned
		pause.Reset(s.cfg.CompactionPause)
	}
}

// deleteBatch deletes the doomed entries of the key bucket in one write
// transaction, and records the compaction at rev finished if it is.
func (c *compactor) deleteBatch(doomed [][]byte, finished bool, rev int64) error {
	wt := c.s.b.Write()
	var err error
	for _, k := range doomed {
		if err == nil {
			err = wt.Delete(BucketKey, k)
		}
	}
	if err == nil && finished {
		failpoint.Hit("compactBeforeSetFinishedCompact")
		err = wt.Put(BucketMeta, MetaFinishedCompactRev, RevisionKey(Revision{Main: rev}, false))
	}
	if uerr := wt.Unlock(); err == nil {
		err = uerr
	}
	return err
}

func (c *compactor) stop() {
	close(c.quit)
	c.wg.Wait()
}
