package forensics

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairnkv/cairn/internal/cliutil/progress"
	"github.com/cairnkv/cairn/pkg/boltfile"
	"github.com/cairnkv/cairn/pkg/cluster"
	"github.com/cairnkv/cairn/pkg/snapfmt"
	"github.com/cairnkv/cairn/pkg/store"
	"github.com/cairnkv/cairn/pkg/writebehind"
)

// copySnapshotDB copies the bbolt file of the snapshot file src to dst
// (which must not exist), without its sha256 trailer, checking the trailer
// on the way unless skipHashCheck is set. dst is synced.
func copySnapshotDB(src, dst string, skipHashCheck bool, prog *progress.Bytes) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", src, err)
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", src, err)
	}
	if st.IsDir() {
		return fmt.Errorf("snapshot %s is a directory, not a snapshot file", src)
	}
	size := st.Size()
	if !snapfmt.HasTrailer(size) && !skipHashCheck {
		return fmt.Errorf("snapshot %s has no sha256 trailer (a db copied out of a data directory?): refusing it without --skip-hash-check", src)
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("restore db: %w", err)
	}
	defer f.Close()
	out := writebehind.New(f, writebehind.DefaultInterval, false)
	defer out.Close()
	err = snapfmt.CopyDB(&progressWriter{w: out, prog: prog}, in, size, !skipHashCheck)
	if errors.Is(err, snapfmt.ErrTrailerMismatch) {
		return fmt.Errorf("snapshot %s is corrupt: its sha256 trailer does not match its contents (%w)", src, snapfmt.ErrTrailerMismatch)
	}
	if err != nil {
		return fmt.Errorf("copy snapshot %s to %s: %w", src, dst, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("sync %s: %w", dst, err)
	}
	return f.Close()
}

// progressWriter reports the bytes written through it.
type progressWriter struct {
	w    io.Writer
	prog *progress.Bytes
	n    int64
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.n += int64(n)
	p.prog.Update(p.n)
	return n, err
}

// restoreDBOptions say how the restored db is rewritten.
type restoreDBOptions struct {
	cluster      *restoreCluster
	bumpRevision uint64
	markCompact  bool
	// toRevision, when positive, rewinds the key space to that revision
	// first (the report goes to rewound).
	toRevision int64
	rewound    *rewound
}

// rewriteRestoredDB makes the copied db the db of the first member of a new
// cluster, as etcdutl does: the old membership is replaced by the new
// members, the raft position is set to the conf change entries of the new
// WAL (index = number of members, term 1), and, if asked, the revision is
// bumped and marked compacted. Unlike etcdutl it also writes the new
// membership's conf state, so that the db agrees with the WAL.
func rewriteRestoredDB(path string, o restoreDBOptions) (rev int64, err error) {
	// bbolt walks every page of a file it opens for writing, in a goroutine
	// of its own that panics on a damaged page: check the pages first.
	if err := boltfile.CheckPages(path); err != nil {
		return 0, err
	}
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("db in snapshot: %w: %v", boltfile.ErrCorrupt, r)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return 0, fmt.Errorf("open restored db %s: %w", path, err)
	}
	defer db.Close()
	if o.toRevision > 0 {
		// Its own transaction: bbolt rebalances the emptied pages at the
		// commit, before anything else walks the key bucket.
		err = db.Update(func(tx *bolt.Tx) error {
			var err error
			*o.rewound, err = rewind(tx, o.toRevision)
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("rewrite restored db %s: %w", path, err)
		}
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(store.BucketMeta) == nil {
			return fmt.Errorf("the snapshot is not an etcd or cairn db: no %q bucket", store.BucketMeta)
		}
		if err := replaceMembers(tx, o.cluster); err != nil {
			return err
		}
		if err := setRaftPosition(tx, o.cluster); err != nil {
			return err
		}
		if o.toRevision > 0 {
			var err error
			if o.rewound.orphans, err = orphanedKeys(tx); err != nil {
				return err
			}
		}
		var err error
		rev, err = bumpRevision(tx, o.bumpRevision, o.markCompact)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("rewrite restored db %s: %w", path, err)
	}
	return rev, db.Close()
}

// replaceMembers empties the members and members_removed buckets and
// records the new members.
func replaceMembers(tx *bolt.Tx, c *restoreCluster) error {
	for _, name := range [][]byte{store.BucketMembers, store.BucketMembersRemoved} {
		if tx.Bucket(name) != nil {
			if err := tx.DeleteBucket(name); err != nil {
				return fmt.Errorf("trim bucket %s: %w", name, err)
			}
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	b := tx.Bucket(store.BucketMembers)
	for _, m := range c.members {
		if err := b.Put(cluster.MemberKey(m.ID), m.Marshal()); err != nil {
			return fmt.Errorf("write member %x: %w", m.ID, err)
		}
	}
	return nil
}

// setRaftPosition records that the db holds everything up to the last conf
// change entry of the new WAL, and the new conf state.
func setRaftPosition(tx *bolt.Tx, c *restoreCluster) error {
	meta := tx.Bucket(store.BucketMeta)
	ids := make([]uint64, len(c.members))
	for i, m := range c.members {
		ids[i] = m.ID
	}
	for k, v := range map[string][]byte{
		string(store.MetaConsistentIndex): store.EncodeUint64(uint64(len(c.members))),
		string(store.MetaTerm):            store.EncodeUint64(restoreTerm),
		string(store.MetaConfState):       cluster.MarshalConfState(&raftpb.ConfState{Voters: ids}),
	} {
		if err := meta.Put([]byte(k), v); err != nil {
			return fmt.Errorf("write meta %s: %w", k, err)
		}
	}
	return nil
}

// bumpRevision returns the db's latest revision after adding bump to it:
// etcd marks the bumped revision with an empty value in the key bucket,
// and with markCompact schedules a compaction there, so that clients
// watching from older revisions are told to start over.
func bumpRevision(tx *bolt.Tx, bump uint64, markCompact bool) (int64, error) {
	kb := tx.Bucket(store.BucketKey)
	latest := int64(0)
	if kb != nil {
		if k, _ := kb.Cursor().Last(); k != nil {
			rev, _, err := store.ParseRevisionKey(k)
			if err != nil {
				return 0, fmt.Errorf("latest revision: %w", err)
			}
			latest = rev.Main
		}
	}
	if bump == 0 {
		return latest, nil
	}
	if kb == nil {
		var err error
		if kb, err = tx.CreateBucket(store.BucketKey); err != nil {
			return 0, err
		}
	}
	rev := store.Revision{Main: latest + int64(bump)}
	if err := kb.Put(store.RevisionKey(rev, false), []byte{}); err != nil {
		return 0, fmt.Errorf("write bumped revision %d: %w", rev.Main, err)
	}
	if markCompact {
		if err := tx.Bucket(store.BucketMeta).Put(store.MetaScheduledCompactRev, store.RevisionKey(rev, false)); err != nil {
			return 0, fmt.Errorf("mark revision %d compacted: %w", rev.Main, err)
		}
	}
	return rev.Main, nil
}
