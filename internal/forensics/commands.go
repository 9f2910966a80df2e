package forensics

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/pkg/boltfile"
)

// Commands are the offline tools that are commands of their own:
// dump-logs, wal, dump-db, hashkv and migrate. They read a data directory or
// file with no member running, and never write to their input, except `wal
// repair` and `migrate`, which say what they changed.
func Commands() []*cobra.Command {
	return []*cobra.Command{newDumpLogsCommand(), newWALCommand(), newDumpDBCommand(), newHashKVCommand(), newMigrateCommand()}
}

// SnapshotCommands are the offline subcommands of snapshot: status and
// restore.
func SnapshotCommands() []*cobra.Command {
	return []*cobra.Command{newSnapshotStatusCommand(), newSnapshotRestoreCommand()}
}

// dbLockTimeout bounds the wait for the lock of a db file that another
// process holds: the tools report it rather than hang.
const dbLockTimeout = 2 * time.Second

// Paths inside a data directory.
const (
	memberDirName = "member"
	walDirName    = "wal"
	snapDirName   = "snap"
	dbFileName    = "db"
)

func walDir(dataDir string) string  { return filepath.Join(dataDir, memberDirName, walDirName) }
func snapDir(dataDir string) string { return filepath.Join(dataDir, memberDirName, snapDirName) }
func dbPath(dataDir string) string  { return filepath.Join(snapDir(dataDir), dbFileName) }

// resolveDBFile accepts a data directory or a db file and returns the db
// file's path.
func resolveDBFile(arg string) (string, error) {
	st, err := os.Stat(arg)
	if err != nil {
		return "", fmt.Errorf("db %s: %w", arg, err)
	}
	if !st.IsDir() {
		return arg, nil
	}
	p := dbPath(arg)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("data dir %s has no db file: %w", arg, err)
	}
	return p, nil
}

// resolveWALDir accepts a data directory, its member directory or a WAL
// directory and returns the WAL directory.
func resolveWALDir(arg string) (string, error) {
	st, err := os.Stat(arg)
	if err != nil {
		return "", fmt.Errorf("data dir %s: %w", arg, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("data dir %s is not a directory", arg)
	}
	for _, cand := range []string{walDir(arg), filepath.Join(arg, walDirName)} {
		if st, err := os.Stat(cand); err == nil && st.IsDir() {
			return cand, nil
		}
	}
	if filepath.Base(arg) == walDirName {
		return arg, nil
	}
	return "", fmt.Errorf("data dir %s has no %s directory", arg, filepath.Join(memberDirName, walDirName))
}

// withOfflineDB opens the db file of arg (a data directory or a db file)
// read-only for f, and closes it when f returns.
func withOfflineDB(arg string, f func(db *boltfile.DB) error) error {
	p, err := resolveDBFile(arg)
	if err != nil {
		return err
	}
	db, err := boltfile.Open(p, dbLockTimeout)
	if err != nil {
		return err
	}
	defer db.Close()
	return f(db)
}

// outputFormat returns --write-out when it was given, or def. It fails
// unless the format is one of allowed.
func outputFormat(cmd *cobra.Command, def string, allowed ...string) (string, error) {
	format := def
	if f := cmd.Flags().Lookup("write-out"); f != nil && f.Changed {
		format = f.Value.String()
	}
	for _, a := range allowed {
		if format == a {
			return format, nil
		}
	}
	return "", cmderr.WithCode(cmderr.ExitBadFeature, fmt.Errorf("%s not supported as output format by %s (use one of %v)", format, cmd.CommandPath(), allowed))
}

// fileSize returns the size of the file at path, or 0.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
