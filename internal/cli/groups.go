package cli

import "github.com/spf13/cobra"

// Command groups of the help, as etcdctl shows them.
var (
	kvGroup          = &cobra.Group{ID: "kv", Title: "Key-value commands"}
	maintenanceGroup = &cobra.Group{ID: "maintenance", Title: "Cluster maintenance commands"}
	authGroup        = &cobra.Group{ID: "auth", Title: "Authentication commands"}
	utilityGroup     = &cobra.Group{ID: "utility", Title: "Utility commands"}
	serverGroup      = &cobra.Group{ID: "server", Title: "Server commands"}
	offlineGroup     = &cobra.Group{ID: "offline", Title: "Offline commands (data directories and files of stopped members)"}
)

// addToGroup attaches cmds to root under group, declaring the group on
// root the first time.
func addToGroup(root *cobra.Command, group *cobra.Group, cmds ...*cobra.Command) {
	if !root.ContainsGroup(group.ID) {
		root.AddGroup(&cobra.Group{ID: group.ID, Title: group.Title})
	}
	for _, c := range cmds {
		c.GroupID = group.ID
		if c.Parent() == nil {
			root.AddCommand(c)
		}
	}
}
