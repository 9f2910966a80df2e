package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// useEtcdctlHelp makes the help of every command read like etcdctl's: the
// global flags are not repeated under each command (`cairn options` lists
// them), commands that only group subcommands say how to list them, and
// every command shows examples. It is applied once the tree is complete.
func useEtcdctlHelp(root *cobra.Command) {
	globals := root.PersistentFlags()
	cobra.AddTemplateFunc("ownFlagUsages", func(cmd *cobra.Command) string {
		return flagUsagesWithout(cmd.LocalFlags(), globals)
	})
	cobra.AddTemplateFunc("inheritedFlagUsages", func(cmd *cobra.Command) string {
		return flagUsagesWithout(cmd.InheritedFlags(), globals)
	})
	root.SetUsageTemplate(usageTemplate)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c != root && !c.Runnable() && c.HasAvailableSubCommands() && !strings.Contains(c.Short, "--help") {
			c.Short = fmt.Sprintf("%s. Use `%s --help` to see subcommands", strings.TrimSuffix(c.Short, "."), c.CommandPath())
		}
		if c.Example == "" {
			c.Example = extraExamples[strings.TrimPrefix(c.CommandPath(), root.Name()+" ")]
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// flagUsagesWithout is the usage text of the visible flags of fs that are
// not global flags.
func flagUsagesWithout(fs, globals *pflag.FlagSet) string {
	own := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.VisitAll(func(f *pflag.Flag) {
		if globals.Lookup(f.Name) == nil && !f.Hidden {
			own.AddFlag(f)
		}
	})
	return strings.TrimRight(own.FlagUsages(), " \n")
}

// usageTemplate is cobra's usage template with the global flags left out
// and etcdctl's pointer to `options` at the end.
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}{{$cmds := .Commands}}{{if eq (len .Groups) 0}}

Available Commands:{{range $cmds}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{else}}{{range $group := .Groups}}

{{.Title}}{{range $cmds}}{{if (and (eq .GroupID $group.ID) (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if not .AllChildCommandsHaveGroup}}

Additional Commands:{{range $cmds}}{{if (and (eq .GroupID "") (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{end}}{{end}}{{with ownFlagUsages .}}

Flags:
{{.}}{{end}}{{with inheritedFlagUsages .}}

Inherited Flags:
{{.}}{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}
Use "{{.Root.Name}} options" for a list of global command-line options (applies to all commands).
`

// extraExamples are the examples of the commands whose definition has
// none, by command path without "cairn ".
var extraExamples = map[string]string{
	"alarm list":             "  cairn alarm list\n  cairn alarm list -w table --endpoints=$ALL_MEMBERS",
	"alarm disarm":           "  cairn alarm disarm   # after freeing space (compaction, defrag) to clear NOSPACE",
	"auth enable":            "  cairn user add root && cairn user grant-role root root\n  cairn auth enable",
	"auth disable":           "  cairn --user root auth disable",
	"auth status":            "  cairn auth status\n  cairn auth status -w json",
	"lease list":             "  cairn lease list\n  cairn lease list -w json --hex",
	"options":                "  cairn options",
	"version":                "  cairn version",
	"role add":               "  cairn role add reader",
	"role delete":            "  cairn role delete reader",
	"role get":               "  cairn role get reader\n  cairn role get reader -w json",
	"role list":              "  cairn role list",
	"role revoke-permission": "  cairn role revoke-permission reader /config/\n  cairn role revoke-permission reader /jobs/ --prefix\n  cairn role revoke-permission reader a z",
	"user delete":            "  cairn user delete alice",
	"user get":               "  cairn user get alice\n  cairn user get alice --detail",
	"user grant-role":        "  cairn user grant-role alice reader",
	"user list":              "  cairn user list",
	"user passwd":            "  cairn user passwd alice\n  echo newpassword | cairn user passwd alice --interactive=false",
	"user revoke-role":       "  cairn user revoke-role alice reader",
	"dump-db hash":           "  cairn dump-db hash /var/lib/etcd\n  cairn dump-db hash backup.db",
	"dump-db history":        "  cairn dump-db history /var/lib/etcd /registry/pods/default/web-0",
	"dump-db iterate-bucket": "  cairn dump-db iterate-bucket /var/lib/etcd key --decode --limit 10\n  cairn dump-db iterate-bucket backup.db members --decode",
	"dump-db list-bucket":    "  cairn dump-db list-bucket /var/lib/etcd",
	"dump-logs":              "  cairn dump-logs /var/lib/etcd\n  cairn dump-logs /var/lib/etcd --start-index 1000 --end-index 1100\n  cairn dump-logs /var/lib/etcd --entry-type IRRPut,IRRDeleteRange --raw",
	"hashkv":                 "  cairn hashkv /var/lib/etcd\n  cairn hashkv backup.db --rev 1234",
	"snapshot restore":       "  cairn snapshot restore backup.db --data-dir /var/lib/etcd-restored \\\n    --name m1 --initial-cluster m1=http://10.0.0.1:2380 --initial-advertise-peer-urls http://10.0.0.1:2380",
	"snapshot status":        "  cairn snapshot status backup.db -w table",
	"wal verify":             "  cairn wal verify /var/lib/etcd",
	"wal repair":             "  cairn wal repair /var/lib/etcd   # truncates a torn last record; stop the member first",
}
