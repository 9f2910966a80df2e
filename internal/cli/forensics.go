package cli

import (
	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/forensics"
	"github.com/cairnkv/cairn/internal/forensics/diagnose"
)

// addForensicsCommands attaches the offline tools of internal/forensics,
// which read a data directory or file with no member running: dump-logs,
// wal, dump-db, hashkv, diagnose, snapshot status/restore, and --data-dir for
// defrag. Call it after addMaintenanceCommands: it extends that file's
// defrag and snapshot commands.
func addForensicsCommands(root *cobra.Command) {
	addToGroup(root, offlineGroup, forensics.Commands()...)
	addToGroup(root, offlineGroup, diagnose.NewCommand())
	snapshot := subcommandGroup(root, "snapshot", "Manages etcd node snapshots")
	snapshot.AddCommand(forensics.SnapshotCommands()...)
	defrag, _, _ := root.Find([]string{"defrag"})
	forensics.AttachOfflineDefrag(defrag)
}
