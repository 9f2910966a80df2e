package forensics

import (
	"bufio"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	bolt "go.etcd.io/bbolt"

	"github.com/cairnkv/cairn/pkg/boltfile"
)

// newDumpDBCommand builds `dump-db`: etcd-dump-db's commands on the bbolt
// file of a data directory, read-only.
func newDumpDBCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dump-db <subcommand>",
		Short: "Inspects the db file of a data directory offline (list-bucket, iterate-bucket, hash, history)",
		Long: `dump-db reads the bbolt file of a data directory (DATA_DIR/member/snap/db, or a db
file given directly) read-only, with no member running, as etcd-dump-db does.`,
	}
	cmd.AddCommand(newListBucketCommand(), newIterateBucketCommand(), newDBHashCommand(), newHistoryCommand())
	return cmd
}

func newListBucketCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "list-bucket <data dir or db file>",
		Short:   "Lists the buckets of the db",
		Example: "  cairn dump-db list-bucket /var/lib/etcd",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withOfflineDB(args[0], func(db *boltfile.DB) error {
				names, err := db.Buckets()
				if err != nil {
					return err
				}
				w := bufio.NewWriter(cmd.OutOrStdout())
				for _, n := range names {
					fmt.Fprintln(w, n)
				}
				return w.Flush()
			})
		},
	}
}

func newIterateBucketCommand() *cobra.Command {
	var (
		decode bool
		limit  uint64
	)
	cmd := &cobra.Command{
		Use:   "iterate-bucket <data dir or db file> <bucket>",
		Short: "Prints the entries of a bucket, newest key first",
		Long: `iterate-bucket prints the entries of one bucket in reverse key order (the newest
revision first in the key bucket), as etcd-dump-db does. With --decode every bucket's
values are decoded: revisions and KeyValues, meta, leases, auth users and roles,
members, cluster and alarms.`,
		Example: `  cairn dump-db iterate-bucket /var/lib/etcd key --decode --limit 10
  cairn dump-db iterate-bucket backup.db members --decode`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, bucket := pathAndOperand(args)
			return withOfflineDB(path, func(db *boltfile.DB) error {
				return iterateBucket(db, bucket, decode, limit, bufio.NewWriter(cmd.OutOrStdout()))
			})
		},
	}
	cmd.Flags().BoolVar(&decode, "decode", false, "decode the values of the bucket")
	cmd.Flags().Uint64Var(&limit, "limit", 0, "print at most this many entries (0: all)")
	return cmd
}

// iterateBucket writes the entries of bucket, last key first. Entries that do
// not decode are printed raw; the error then counts them.
func iterateBucket(db *boltfile.DB, bucket string, decode bool, limit uint64, w *bufio.Writer) error {
	var undecodable []error
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return fmt.Errorf("bucket %q not found in %s", bucket, db.Path())
		}
		c := b.Cursor()
		n := uint64(0)
		for k, v := c.Last(); k != nil && (limit == 0 || n < limit); k, v = c.Prev() {
			line, err := formatBucketEntry(bucket, k, v, decode)
			if err != nil {
				undecodable = append(undecodable, err)
			}
			w.WriteString(line)
			w.WriteByte('\n')
			n++
		}
		return nil
	})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	if len(undecodable) > 0 {
		return fmt.Errorf("%d entries of bucket %s do not decode, first: %w", len(undecodable), bucket, undecodable[0])
	}
	return nil
}

func newDBHashCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "hash <data dir or db file>",
		Short: "Prints the CRC-32C hash of every bucket, key and value of the db",
		Example: `  cairn dump-db hash /var/lib/etcd
  cairn dump-db hash backup.db`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withOfflineDB(args[0], func(db *boltfile.DB) error {
				h, err := db.Hash(nil)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "db path: %s\nHash: %d\n", db.Path(), h)
				return nil
			})
		},
	}
}

// pathAndOperand splits the two arguments of a command that takes a data
// dir (or db file) and an operand, in either order: etcd-dump-db puts the
// path first, so that order wins when both exist on disk.
func pathAndOperand(args []string) (path, operand string) {
	if !exists(args[0]) && exists(args[1]) {
		return args[1], args[0]
	}
	return args[0], args[1]
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
