package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/version"
)

// addUtilityCommands attaches version and options.
func addUtilityCommands(root *cobra.Command) {
	addToGroup(root, utilityGroup, &cobra.Command{
		Use:     "version",
		Short:   "Prints the version of cairn",
		Example: "  cairn version",
		Args:    cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "cairn version: %s\nAPI version: %s\n", version.Version, version.APIVersion)
		},
	}, &cobra.Command{
		Use:     "options",
		Short:   "Shows the global command-line flags",
		Example: "  cairn options",
		Args:    cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "The following options can be passed to any command:\n\n%s",
				cmd.Root().PersistentFlags().FlagUsages())
		},
	})
}
