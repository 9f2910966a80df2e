// Package cli builds cairn's command tree: the root command, the global
// flags and the client command groups (kv, watch, lease, member, endpoint,
// auth, maintenance, ...), one file per group, `gateway start` and
// `grpc-proxy start`. It puts
// in the tree the member's command of internal/cli/serve, the offline kit
// of internal/forensics and the load commands of internal/bench, and
// renders the man pages and completion scripts of the tree with
// internal/cli/docs.
//
// It is the top layer of the commands: it and the command families it
// attaches (serve, forensics, bench) print, fail and read their arguments
// through the packages of internal/cliutil (printer, cmderr, keyrange,
// term, progress, metrics), which are below all of them. Its own files
// import the client (internal/client), never the server: that is serve's.
// Nothing imports it but cmd/cairn and internal/gendocs.
package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/cli/proxy"
	"github.com/cairnkv/cairn/internal/cli/serve"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/version"
)

// NewRootCommand returns the `cairn` command with every subcommand attached.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "cairn",
		Short: "An etcd-compatible replicated key-value store: server, client and forensics kit",
		Long: `cairn is an etcd v3 compatible, replicated, multi-version key-value store.

One binary hosts a member (cairn serve), is the client (cairn get/put/txn/...),
and reads the data directories of cairn and etcd members offline
(cairn dump-logs, dump-db, snapshot, defrag).`,
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate(`{{ printf "%s" (versionText) }}`)
	cobra.AddTemplateFunc("versionText", version.String)
	g := addGlobalFlags(root)
	addKVCommands(root, g)
	addLeaseCommands(root, g)
	addMemberCommands(root, g)
	addEndpointCommands(root, g)
	addMaintenanceCommands(root, g)
	addDowngradeCommands(root, g)
	addConcurrencyCommands(root, g)
	addAuthCommands(root, g)
	addUtilityCommands(root)
	addBenchCommands(root, g)
	addCheckCommands(root, g)
	addMirrorCommand(root, g)
	addCompletionCommand(root)
	addForensicsCommands(root)
	attachLiveDiagnose(root, g)
	addToGroup(root, serverGroup, serve.NewCommand())
	addToGroup(root, serverGroup, newGatewayCommand())
	addToGroup(root, serverGroup, proxy.Command())
	useEtcdctlHelp(root)
	return root
}

// Execute runs cairn with args and returns the process exit code. Errors are
// one line on stderr, as etcdctl prints them.
func Execute(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := NewRootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.Execute(); err != nil {
		return cmderr.Report(stderr, err)
	}
	return 0
}
