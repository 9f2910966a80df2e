package forensics

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	bolt "go.etcd.io/bbolt"

	"github.com/cairnkv/cairn/internal/cliutil/printer"
	"github.com/cairnkv/cairn/pkg/boltfile"
	"github.com/cairnkv/cairn/pkg/snapfmt"
	"github.com/cairnkv/cairn/pkg/store"
)

func newSnapshotStatusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status <filename>",
		Short: "Gets backend snapshot status of a given file",
		Long: `status prints the hash, revision, number of keys, size and storage version of a
snapshot file (or of a db file), as etcdutl snapshot status does. A snapshot file's
sha256 trailer is checked first.`,
		Example: "  cairn snapshot status backup.db -w table",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd, printer.FormatSimple, printer.FormatSimple, printer.FormatTable, printer.FormatJSON, printer.FormatFields)
			if err != nil {
				return err
			}
			st, err := snapshotStatus(args[0])
			if err != nil {
				return err
			}
			return printer.New(cmd.OutOrStdout(), format, false).Print(st)
		},
	}
}

// snapshotStatusResult is what `snapshot status` reports.
type snapshotStatusResult struct {
	Hash      uint32 `json:"hash"`
	Revision  int64  `json:"revision"`
	TotalKey  int    `json:"totalKey"`
	TotalSize int64  `json:"totalSize"`
	Version   string `json:"version"`
}

// snapshotStatus checks the sha256 trailer of the file at path, if it has
// one, and reads its status read-only.
func snapshotStatus(path string) (*snapshotStatusResult, error) {
	if err := checkSnapshotTrailer(path); err != nil {
		return nil, err
	}
	db, err := boltfile.Open(path, dbLockTimeout)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	st := &snapshotStatusResult{}
	if st.Hash, err = db.Hash(nil); err != nil {
		return nil, err
	}
	idx, err := store.ReadIndex(db)
	if err != nil {
		return nil, err
	}
	st.Revision = idx.Rev()
	st.TotalKey = idx.LiveKeys()
	if st.TotalSize, err = db.Size(); err != nil {
		return nil, err
	}
	err = db.View(func(tx *bolt.Tx) error {
		if mb := tx.Bucket(store.BucketMeta); mb != nil {
			st.Version = string(mb.Get(store.MetaStorageVersion))
		}
		return nil
	})
	return st, err
}

// checkSnapshotTrailer verifies the sha256 trailer of a snapshot file. A
// file without one (a db copied out of a data directory) passes.
func checkSnapshotTrailer(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("snapshot %s is a directory, not a snapshot file", path)
	}
	if !snapfmt.HasTrailer(fi.Size()) {
		return nil
	}
	if err := snapfmt.VerifyTrailer(path); err != nil {
		if errors.Is(err, snapfmt.ErrTrailerMismatch) {
			return fmt.Errorf("snapshot %s is corrupt: its sha256 trailer does not match its contents", path)
		}
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	return nil
}

func (s *snapshotStatusResult) cells() []string {
	return []string{fmt.Sprintf("%x", s.Hash), fmt.Sprint(s.Revision), fmt.Sprint(s.TotalKey), printer.HumanBytes(s.TotalSize), s.Version}
}

func (s *snapshotStatusResult) PrintSimple(p *printer.Printer) {
	c := s.cells()
	p.Linef("%s, %s, %s, %s, %s", c[0], c[1], c[2], c[3], c[4])
}

func (s *snapshotStatusResult) TableRows(*printer.Printer) ([]string, [][]string) {
	return []string{"hash", "revision", "total keys", "total size", "version"}, [][]string{s.cells()}
}

func (s *snapshotStatusResult) JSONValue(*printer.Printer) any { return s }

func (s *snapshotStatusResult) PrintFields(p *printer.Printer) {
	p.Field("Hash", s.Hash)
	p.Field("Revision", s.Revision)
	p.Field("Keys", s.TotalKey)
	p.Field("Size", s.TotalSize)
	p.Field("Version", s.Version)
}
