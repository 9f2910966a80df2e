package forensics

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
	"github.com/cairnkv/cairn/internal/cliutil/progress"
	"github.com/cairnkv/cairn/pkg/boltfile"
)

// AttachOfflineDefrag gives the online defrag command --data-dir, which
// defragments the db of a data directory whose member is not running, as
// etcdutl defrag does; without it, defrag stays the online command.
func AttachOfflineDefrag(defrag *cobra.Command) {
	var dataDir string
	defrag.Flags().StringVar(&dataDir, "data-dir", "", "defragment, offline, the data directory (or db file) of a member that is not running")
	defrag.Example += "\n  cairn defrag --data-dir /var/lib/etcd   # offline, member stopped"
	online := defrag.RunE
	defrag.RunE = func(cmd *cobra.Command, args []string) error {
		if dataDir == "" {
			return online(cmd, args)
		}
		if len(args) > 0 {
			return cmderr.BadArgs("defrag --data-dir takes no arguments")
		}
		if f := cmd.Flags().Lookup("cluster"); f != nil && f.Changed {
			return cmderr.BadArgs("--cluster and --data-dir cannot be given together")
		}
		return defragDataDir(cmd, dataDir)
	}
}

// defragDataDir rewrites the db of dataDir without free pages and reports
// the sizes before and after: the bytes in use and the file's.
func defragDataDir(cmd *cobra.Command, dataDir string) error {
	path, err := resolveDBFile(dataDir)
	if err != nil {
		return fmt.Errorf("failed to defragment etcd data[%s]: %w", dataDir, err)
	}
	start := time.Now()
	prog := progress.ForCommand(cmd, "defrag", fileSize(path), false)
	prog.Update(0)
	before, after, err := defragFile(path)
	prog.Finish()
	if err != nil {
		return fmt.Errorf("failed to defragment etcd data[%s]: %w", dataDir, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Finished defragmenting etcd data[%s]. took %s\n%s", dataDir, time.Since(start).Round(time.Millisecond), defragSizes(before, after))
	return nil
}

// dbSizes are the sizes of a db file: the bytes of its live pages and the
// bytes of the file.
type dbSizes struct{ inUse, file int64 }

// defragSizes is the report of the sizes, one line each:
//
//	in use: 22 MB (21987328 bytes) before, 19 MB (19013632 bytes) after
//	file:   34 MB (34078720 bytes) before, 36 MB (35790848 bytes) after
func defragSizes(before, after dbSizes) string {
	line := func(what string, before, after int64) string {
		return fmt.Sprintf("%-7s %s (%d bytes) before, %s (%d bytes) after\n", what, printer.HumanBytes(before), before, printer.HumanBytes(after), after)
	}
	return line("in use:", before.inUse, after.inUse) + line("file:", before.file, after.file)
}

// defragFile copies the bbolt file at path compactly into PATH.defrag and
// renames the copy over the original once it is complete and synced: a
// crash midway leaves the original as it was (and a stray .defrag file,
// removed by the next run). The original is only read. It returns the
// sizes of the original and of the copy.
func defragFile(path string) (before, after dbSizes, err error) {
	if err := boltfile.CheckPages(path); err != nil {
		return before, after, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return before, after, err
	}
	tmp := path + ".defrag"
	if err := os.Remove(tmp); err != nil && !os.IsNotExist(err) {
		return before, after, fmt.Errorf("remove leftover %s: %w", tmp, err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	before.file = st.Size()
	if before.inUse, after.inUse, err = compactInto(path, tmp, st.Mode().Perm()); err != nil {
		return before, after, err
	}
	after.file = fileSize(tmp)
	if err := os.Rename(tmp, path); err != nil {
		return before, after, fmt.Errorf("replace %s: %w", path, err)
	}
	return before, after, syncDir(filepath.Dir(path))
}

// compactInto copies the db at src into a new file dst and returns the
// bytes in use of each. bbolt panics or faults on damaged pages; those
// become errors.
func compactInto(src, dst string, mode os.FileMode) (srcInUse, dstInUse int64, err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("db %s: %w: %v", src, boltfile.ErrCorrupt, r)
		}
	}()
	// The free list, loaded, says how much of the original is in use.
	in, err := bolt.Open(src, 0o400, &bolt.Options{ReadOnly: true, Timeout: dbLockTimeout, PreLoadFreelist: true})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return 0, 0, fmt.Errorf("open %s: %w", src, boltfile.ErrLocked)
		}
		return 0, 0, fmt.Errorf("open %s: %w", src, err)
	}
	defer in.Close()
	if srcInUse, err = inUse(in); err != nil {
		return 0, 0, err
	}
	if err := boltfile.CompactTo(in, dst, mode, false); err != nil {
		return 0, 0, err
	}
	out, err := bolt.Open(dst, 0o400, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		return 0, 0, fmt.Errorf("open the copy %s: %w", dst, err)
	}
	defer out.Close()
	dstInUse, err = inUse(out)
	return srcInUse, dstInUse, err
}

// inUse is boltfile.SizeInUse of db, as of its last commit.
func inUse(db *bolt.DB) (int64, error) {
	var size int64
	err := db.View(func(tx *bolt.Tx) error {
		size = tx.Size()
		return nil
	})
	return boltfile.SizeInUse(db, size), err
}
