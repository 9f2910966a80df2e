package forensics

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/progress"
	"github.com/cairnkv/cairn/pkg/boltfile"
)

// restoreOptions are the flags of `snapshot restore`.
type restoreOptions struct {
	dataDir           string
	walDir            string
	name              string
	initialCluster    string
	token             string
	advertisePeerURLs string
	skipHashCheck     bool
	bumpRevision      uint64
	markCompacted     bool
	toRevision        int64
}

func newSnapshotRestoreCommand() *cobra.Command {
	var o restoreOptions
	cmd := &cobra.Command{
		Use:   "restore <filename> --data-dir {output dir} [options]",
		Short: "Restores an etcd member snapshot to an etcd directory",
		Long: `restore makes, from a snapshot file, the data directory of one member of a new cluster
that starts with the snapshot's keys, as etcdutl snapshot restore does: the same db
changes (new membership, raft position), WAL (one conf change entry per member) and
.snap file, so that cairn and etcd start on it. Run it once per member with the same
--initial-cluster and --initial-cluster-token.

The snapshot's sha256 trailer is checked (--skip-hash-check for a db copied out of a
data directory). The data directory of a stopped member can be restored from too: give
the directory (its db has no trailer). The data directory must not exist or be empty; it
is built beside it and renamed into place, so a failure leaves nothing behind.

--to-revision R restores the store as it was at revision R, with its history up to R
(point-in-time recovery: "someone deleted /registry at revision R+1"). R must be at or
after the snapshot's compaction. Leases, users, roles and the cluster's settings are
those of the snapshot: a key of revision R whose lease was revoked later keeps that
lease's ID and never expires (the restore says how many there are).`,
		Example: `  cairn snapshot restore backup.db --data-dir /var/lib/etcd-restored \
    --name m1 --initial-cluster m1=http://10.0.0.1:2380 --initial-advertise-peer-urls http://10.0.0.1:2380
  # the store as of revision 41200, from a stopped member's data directory
  cairn snapshot restore /var/lib/etcd --to-revision 41200 --data-dir /var/lib/etcd-41200`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.dataDir == "" {
				o.dataDir = o.name + ".cairn"
			}
			if o.bumpRevision > 0 && !o.markCompacted {
				return cmderr.BadArgs("--mark-compacted required if --bump-revision > 0")
			}
			if o.markCompacted && o.bumpRevision == 0 {
				return cmderr.BadArgs("--mark-compacted is only allowed with --bump-revision > 0")
			}
			if o.toRevision < 0 {
				return cmderr.BadArgs("--to-revision %d: a revision is positive", o.toRevision)
			}
			cluster, err := newRestoreCluster(o.name, o.initialCluster, o.token, o.advertisePeerURLs)
			if err != nil {
				return err
			}
			var rw rewound
			rev, err := restoreSnapshot(cmd, args[0], o, cluster, &rw)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Restored snapshot %s into %s: member %s (%x) of cluster %x with %d member(s), revision %d\n",
				args[0], o.dataDir, o.name, cluster.self.ID, cluster.id, len(cluster.members), rev)
			if o.toRevision > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "Rewound from revision %d to %d: %d entries of later revisions dropped\n", rw.from, rw.to, rw.entries)
				if rw.orphans > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "Warning: %d key(s) of revision %d are attached to leases revoked since: they keep the lease ID and never expire\n", rw.orphans, rw.to)
				}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.dataDir, "data-dir", "", "path to the output data directory (default: <name>.cairn)")
	fs.StringVar(&o.walDir, "wal-dir", "", "path to the WAL directory (default: <data-dir>/member/wal)")
	fs.StringVar(&o.name, "name", "default", "human-readable name for this member")
	fs.StringVar(&o.initialCluster, "initial-cluster", "default=http://localhost:2380", "initial cluster configuration for restore bootstrap")
	fs.StringVar(&o.token, "initial-cluster-token", "etcd-cluster", "initial cluster token for the etcd cluster during restore bootstrap")
	fs.StringVar(&o.advertisePeerURLs, "initial-advertise-peer-urls", "http://localhost:2380", "list of this member's peer URLs to advertise to the rest of the cluster")
	fs.BoolVar(&o.skipHashCheck, "skip-hash-check", false, "ignore snapshot integrity hash value (required if copied from data directory)")
	fs.Uint64Var(&o.bumpRevision, "bump-revision", 0, "how much to increase the latest revision after restore")
	fs.Int64Var(&o.toRevision, "to-revision", 0, "restore the store as of this revision, with its history up to it (0: the snapshot's latest)")
	fs.BoolVar(&o.markCompacted, "mark-compacted", false, "mark the latest revision after restore as the point of scheduled compaction (required if --bump-revision > 0, disallowed otherwise)")
	return cmd
}

// restoreSnapshot builds the data directory in a temporary directory beside
// it and renames it into place. It returns the latest revision.
func restoreSnapshot(cmd *cobra.Command, file string, o restoreOptions, c *restoreCluster, rw *rewound) (rev int64, err error) {
	if err := checkEmptyOrAbsent(o.dataDir, "data-dir"); err != nil {
		return 0, err
	}
	if o.walDir != "" {
		if err := checkEmptyOrAbsent(o.walDir, "wal-dir"); err != nil {
			return 0, err
		}
		defer func() {
			if err != nil {
				os.RemoveAll(o.walDir)
			}
		}()
	}
	// A data directory: its db, which has no trailer.
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		if file, err = resolveDBFile(file); err != nil {
			return 0, err
		}
		o.skipHashCheck = true
	}
	// Without the hash check, the db must be shown sound before anything is
	// written (bbolt would crash on a damaged page of the copy it opens for
	// writing). With it, the sha256 comes first, and the copy is checked.
	if fi, err := os.Stat(file); err == nil && !fi.IsDir() && o.skipHashCheck {
		if err := boltfile.CheckPages(file); err != nil {
			return 0, fmt.Errorf("snapshot %s does not hold a sound db: %w", file, err)
		}
	}
	parent := filepath.Dir(filepath.Clean(o.dataDir))
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return 0, fmt.Errorf("restore: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(o.dataDir)+".restoring-")
	if err != nil {
		return 0, fmt.Errorf("restore: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed into place
	if err := os.Chmod(tmp, 0o700); err != nil {
		return 0, fmt.Errorf("restore: %w", err)
	}
	if err := os.MkdirAll(snapDir(tmp), 0o700); err != nil {
		return 0, fmt.Errorf("restore: %w", err)
	}
	prog := progress.ForCommand(cmd, "restore: copying snapshot", fileSize(file), false)
	err = copySnapshotDB(file, dbPath(tmp), o.skipHashCheck, prog)
	prog.Finish()
	if err != nil {
		return 0, err
	}
	rev, err = rewriteRestoredDB(dbPath(tmp), restoreDBOptions{cluster: c, bumpRevision: o.bumpRevision,
		markCompact: o.markCompacted, toRevision: o.toRevision, rewound: rw})
	var outside *revisionOutsideError
	if errors.As(err, &outside) {
		return 0, outside
	}
	if err != nil {
		return 0, fmt.Errorf("snapshot %s does not hold a sound db: %w", file, err)
	}
	if err := writeRestoredSnap(snapDir(tmp), c); err != nil {
		return 0, err
	}
	wal := walDir(tmp)
	if o.walDir != "" {
		wal = o.walDir
	}
	if err := writeRestoredWAL(wal, c); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, o.dataDir); err != nil {
		return 0, fmt.Errorf("restore: move %s into place: %w", o.dataDir, err)
	}
	return rev, syncDir(parent)
}

// checkEmptyOrAbsent refuses an existing directory that holds anything.
func checkEmptyOrAbsent(dir, flag string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case os.IsNotExist(err):
		return nil
	case err != nil:
		return fmt.Errorf("--%s %q could not be read: %w", flag, dir, err)
	case len(entries) > 0:
		return fmt.Errorf("--%s %q is not empty: refusing to overwrite it", flag, dir)
	}
	return nil
}

// syncDir fsyncs a directory so that a rename in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
