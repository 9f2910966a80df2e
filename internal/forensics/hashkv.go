package forensics

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/cliutil/printer"
	"github.com/cairnkv/cairn/pkg/boltfile"
	"github.com/cairnkv/cairn/pkg/store"
)

func newHashKVCommand() *cobra.Command {
	var rev int64
	cmd := &cobra.Command{
		Use:   "hashkv <data dir or db file>",
		Short: "Prints the KV history hash of a given file",
		Long: `hashkv computes, read-only, the hash of the key-value history up to a revision that a
member's HashKV returns, as etcdutl hashkv does: members that applied the same history
have the same hash.`,
		Example: `  cairn hashkv /var/lib/etcd
  cairn hashkv backup.db --rev 1234`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd, printer.FormatSimple, printer.FormatSimple, printer.FormatTable, printer.FormatJSON, printer.FormatFields)
			if err != nil {
				return err
			}
			return withOfflineDB(args[0], func(db *boltfile.DB) error {
				idx, err := store.ReadIndex(db)
				if err != nil {
					return err
				}
				h, err := idx.HashKV(rev)
				if err != nil {
					return fmt.Errorf("hashkv %s at revision %d: %w", db.Path(), rev, err)
				}
				return printer.New(cmd.OutOrStdout(), format, false).Print(&hashKVResult{
					Hash: h.Hash, HashRevision: h.HashRevision, CompactRevision: h.CompactRevision})
			})
		},
	}
	cmd.Flags().Int64Var(&rev, "rev", 0, "maximum revision to hash (default: latest revision)")
	return cmd
}

// hashKVResult is what `hashkv` reports.
type hashKVResult struct {
	Hash            uint32 `json:"hash"`
	HashRevision    int64  `json:"hashRevision"`
	CompactRevision int64  `json:"compactRevision"`
}

func (r *hashKVResult) PrintSimple(p *printer.Printer) {
	p.Linef("%d, %d, %d", r.Hash, r.HashRevision, r.CompactRevision)
}

func (r *hashKVResult) TableRows(*printer.Printer) ([]string, [][]string) {
	return []string{"hash", "hash revision", "compact revision"},
		[][]string{{fmt.Sprint(r.Hash), fmt.Sprint(r.HashRevision), fmt.Sprint(r.CompactRevision)}}
}

func (r *hashKVResult) JSONValue(*printer.Printer) any { return r }

func (r *hashKVResult) PrintFields(p *printer.Printer) {
	p.Field("Hash", r.Hash)
	p.Field("Hash revision", r.HashRevision)
	p.Field("Compact revision", r.CompactRevision)
}
