package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// useEtcdctlHelp makes the help of every command read like etcdctl's: the
// global flags are not repeated under each command (`cairn options` lists
// them) and commands that only group subcommands say how to list them. It
// is applied once the tree is complete.
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
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// flagUsagesWithout is the usage text of the visible flags of fs that are
// not global flags. A command's own flag of a global flag's name (the
// --endpoints of `gateway start`) is its own.
func flagUsagesWithout(fs, globals *pflag.FlagSet) string {
	own := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.VisitAll(func(f *pflag.Flag) {
		if globals.Lookup(f.Name) != f && !f.Hidden {
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
