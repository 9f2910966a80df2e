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

	"github.com/cairnkv/cairn/internal/cli/cmderr"
	"github.com/cairnkv/cairn/internal/cli/printer"
	"github.com/cairnkv/cairn/internal/cli/progress"
	"github.com/cairnkv/cairn/pkg/boltfile"
)

// defragTxSize bounds the size of each write transaction of the copy.
const defragTxSize = 64 << 20

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
// the sizes before and after.
func defragDataDir(cmd *cobra.Command, dataDir string) error {
	path, err := resolveDBFile(dataDir)
	if err != nil {
		return fmt.Errorf("failed to defragment etcd data[%s]: %w", dataDir, err)
	}
	start := time.Now()
	before := fileSize(path)
	prog := progress.ForCommand(cmd, "defrag", before, false)
	prog.Update(0)
	err = defragFile(path)
	prog.Finish()
	if err != nil {
		return fmt.Errorf("failed to defragment etcd data[%s]: %w", dataDir, err)
	}
	after := fileSize(path)
	fmt.Fprintf(cmd.OutOrStdout(), "Finished defragmenting etcd data[%s]: db size %s (%d bytes) before, %s (%d bytes) after. took %s\n",
		dataDir, printer.HumanBytes(before), before, printer.HumanBytes(after), after, time.Since(start).Round(time.Millisecond))
	return nil
}

// defragFile copies the bbolt file at path compactly into PATH.defrag and
// renames the copy over the original once it is complete and synced: a
// crash midway leaves the original as it was (and a stray .defrag file,
// removed by the next run). The original is only read.
func defragFile(path string) (err error) {
	if err := boltfile.CheckPages(path); err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp := path + ".defrag"
	if err := os.Remove(tmp); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove leftover %s: %w", tmp, err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if err := compactInto(path, tmp, st.Mode().Perm()); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// compactInto copies the db at src into a new file dst. bbolt panics or
// faults on damaged pages; those become errors.
func compactInto(src, dst string, mode os.FileMode) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("db %s: %w: %v", src, boltfile.ErrCorrupt, r)
		}
	}()
	in, err := bolt.Open(src, 0o400, &bolt.Options{ReadOnly: true, Timeout: dbLockTimeout})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return fmt.Errorf("open %s: %w", src, boltfile.ErrLocked)
		}
		return fmt.Errorf("open %s: %w", src, err)
	}
	defer in.Close()
	out, err := bolt.Open(dst, mode, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	if err := bolt.Compact(out, in, defragTxSize); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("close %s: %w", dst, err)
	}
	return nil
}
