package forensics

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/pkg/kvcodec"
	"github.com/cairnkv/cairn/pkg/store"
)

// rewound says what rewinding a db to a revision did.
type rewound struct {
	from, to int64 // the db's latest revision before, and the one asked for
	entries  int   // entries of later revisions dropped
	// orphans are the keys at the revision attached to a lease the db no
	// longer has (revoked after it): they stay, and never expire. Counted
	// by orphanedKeys.
	orphans int
}

// revisionOutsideError is a --to-revision the snapshot's history does not
// hold.
type revisionOutsideError struct{ msg string }

func (e *revisionOutsideError) Error() string { return e.msg }

// rewind makes the key space of the db the store as of revision rev, with
// its history up to rev: every entry of the key bucket from a later
// revision goes. rev must be at or after the db's compaction (before it,
// the history is gone) and at or before its latest revision. Leases, users,
// roles and members stay as they are in the db.
func rewind(tx *bolt.Tx, rev int64) (rewound, error) {
	r := rewound{to: rev}
	kb := tx.Bucket(store.BucketKey)
	if kb == nil {
		return r, fmt.Errorf("--to-revision %d: the db has no %q bucket", rev, store.BucketKey)
	}
	compacted := int64(0)
	if mb := tx.Bucket(store.BucketMeta); mb != nil {
		// A scheduled compaction may have removed part of the history
		// below it before the snapshot was taken.
		compacted = max(metaRevision(mb, store.MetaScheduledCompactRev), metaRevision(mb, store.MetaFinishedCompactRev))
	}
	if k, _ := kb.Cursor().Last(); k != nil {
		last, _, err := store.ParseRevisionKey(k)
		if err != nil {
			return r, fmt.Errorf("latest revision: %w", err)
		}
		r.from = last.Main
	}
	r.from = max(r.from, compacted)
	switch {
	case rev > r.from:
		return r, &revisionOutsideError{fmt.Sprintf("--to-revision %d is after the snapshot's latest revision %d", rev, r.from)}
	case rev < compacted:
		return r, &revisionOutsideError{fmt.Sprintf("--to-revision %d: required revision has been compacted (the snapshot's history starts at revision %d)", rev, compacted)}
	}
	// The keys are gathered before any is deleted: a bbolt cursor over
	// pages emptied in the same transaction can loop for ever.
	var later [][]byte
	c := kb.Cursor()
	for k, _ := c.Seek(store.RevisionKey(store.Revision{Main: rev + 1}, false)); k != nil; k, _ = c.Next() {
		later = append(later, bytes.Clone(k))
	}
	for _, k := range later {
		if err := kb.Delete(k); err != nil {
			return r, fmt.Errorf("drop revision entry %x: %w", k, err)
		}
	}
	r.entries = len(later)
	return r, nil
}

// orphanedKeys counts the live keys of the key bucket whose lease is not
// in the lease bucket. It runs in a transaction after rewind's.
func orphanedKeys(tx *bolt.Tx) (int, error) {
	kb := tx.Bucket(store.BucketKey)
	leaseOf := map[string]int64{} // live keys with a lease
	kv := new(mvccpb.KeyValue)
	err := kb.ForEach(func(k, v []byte) error {
		_, tomb, err := store.ParseRevisionKey(k)
		if err != nil {
			return err
		}
		kv.Reset()
		if len(v) == 0 {
			return nil // a --bump-revision marker
		}
		if err := kvcodec.Unmarshal(v, kv); err != nil {
			return fmt.Errorf("entry %x: %w", k, err)
		}
		if tomb || kv.Lease == 0 {
			delete(leaseOf, string(kv.Key))
		} else {
			leaseOf[string(kv.Key)] = kv.Lease
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	lb := tx.Bucket(store.BucketLease)
	n := 0
	for _, id := range leaseOf {
		if lb == nil || lb.Get(store.EncodeUint64(uint64(id))) == nil {
			n++
		}
	}
	return n, nil
}
