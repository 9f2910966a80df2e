package cli

import (
	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/cli/docs"
)

// addCompletionCommand attaches completion, in place of cobra's own.
func addCompletionCommand(root *cobra.Command) {
	addToGroup(root, utilityGroup, &cobra.Command{
		Use:   "completion [bash|zsh|fish|powershell]",
		Short: "Generate completion script",
		Long: `To load completions:

Bash:

  $ source <(cairn completion bash)

  # To load completions for each session, execute once:
  # Linux:
  $ cairn completion bash > /etc/bash_completion.d/cairn
  # macOS:
  $ cairn completion bash > /usr/local/etc/bash_completion.d/cairn

Zsh:

  # If shell completion is not already enabled in your environment,
  # you will need to enable it.  You can execute the following once:

  $ echo "autoload -U compinit; compinit" >> ~/.zshrc

  # To load completions for each session, execute once:
  $ cairn completion zsh > "${fpath[1]}/_cairn"

  # You will need to start a new shell for this setup to take effect.

fish:

  $ cairn completion fish | source

  # To load completions for each session, execute once:
  $ cairn completion fish > ~/.config/fish/completions/cairn.fish

PowerShell:

  PS> cairn completion powershell | Out-String | Invoke-Expression

  # To load completions for every new session, run:
  PS> cairn completion powershell > cairn.ps1
  # and source this file from your PowerShell profile.

The same scripts are in the completions/ folder of the source tree.`,
		Example: `  source <(cairn completion bash)
  cairn completion fish > ~/.config/fish/completions/cairn.fish`,
		DisableFlagsInUseLine: true,
		ValidArgs:             []string{"bash", "zsh", "fish", "powershell"},
		Args:                  cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return docs.Completion(cmd.Root(), args[0], cmd.OutOrStdout())
		},
	})
}

// Docs returns the generated documentation files of cairn's command tree,
// by path relative to the root of the source tree.
func Docs() (map[string][]byte, error) { return docs.Files(NewRootCommand()) }

// WriteDocs writes the generated documentation files under dir, the root
// of the source tree (see docs.Write).
func WriteDocs(dir string) error { return docs.Write(dir, NewRootCommand()) }
