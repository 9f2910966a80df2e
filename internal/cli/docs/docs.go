// Package docs renders the documentation of a command tree: a man page
// per command and a completion script per shell, the files under man/ and
// completions/ of the source tree (internal/gendocs writes them) and the
// output of `cairn completion`. It imports cobra and cmderr only.
package docs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
)

// The generated documentation of the source tree: a completion script per
// shell under completions/, a man page per command under man/. They are
// written by `go generate ./...` (cmd/cairn) and must stay equal to what
// the binary produces; a test checks it.
const (
	completionsDir = "completions"
	manDir         = "man"
)

// completionFiles names the completion script of each shell.
var completionFiles = map[string]string{
	"bash":       "cairn.bash",
	"zsh":        "_cairn",
	"fish":       "cairn.fish",
	"powershell": "cairn.ps1",
}

// completionShells are the shells completion scripts are made for, with
// the function that writes each.
var completionShells = map[string]func(root *cobra.Command, w io.Writer) error{
	"bash":       func(root *cobra.Command, w io.Writer) error { return root.GenBashCompletionV2(w, true) },
	"zsh":        func(root *cobra.Command, w io.Writer) error { return root.GenZshCompletion(w) },
	"fish":       func(root *cobra.Command, w io.Writer) error { return root.GenFishCompletion(w, true) },
	"powershell": func(root *cobra.Command, w io.Writer) error { return root.GenPowerShellCompletionWithDesc(w) },
}

// Completion writes the completion script of root for shell to w.
func Completion(root *cobra.Command, shell string, w io.Writer) error {
	gen, ok := completionShells[shell]
	if !ok {
		return cmderr.BadArgs("unsupported shell %q", shell)
	}
	if err := gen(root, w); err != nil {
		return fmt.Errorf("generate %s completion: %w", shell, err)
	}
	return nil
}

// Files returns the documentation files of root, by path relative to the
// root of the source tree.
func Files(root *cobra.Command) (map[string][]byte, error) {
	files := map[string][]byte{}
	for shell, name := range completionFiles {
		var buf bytes.Buffer
		if err := completionShells[shell](root, &buf); err != nil {
			return nil, fmt.Errorf("%s completion: %w", shell, err)
		}
		files[filepath.Join(completionsDir, name)] = buf.Bytes()
	}
	for _, cmd := range documentedCommands(root) {
		files[filepath.Join(manDir, manPageName(cmd))] = manPage(cmd)
	}
	return files, nil
}

// Write writes the documentation files of root under dir, the root of the
// source tree, and removes the files of those folders that are no longer
// generated (the pages of removed commands).
func Write(dir string, root *cobra.Command) error {
	files, err := Files(root)
	if err != nil {
		return err
	}
	for _, sub := range []string{completionsDir, manDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			return err
		}
		for _, e := range entries {
			rel := filepath.Join(sub, e.Name())
			if _, keep := files[rel]; !keep && !e.IsDir() {
				if err := os.Remove(filepath.Join(dir, rel)); err != nil {
					return err
				}
			}
		}
	}
	for rel, data := range files {
		if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// documentedCommands is root and every command below it that has a page:
// not hidden, not help.
func documentedCommands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		out = append(out, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// manPageName is cairn-lease-grant.1 for `cairn lease grant`.
func manPageName(cmd *cobra.Command) string {
	return strings.ReplaceAll(cmd.CommandPath(), " ", "-") + ".1"
}

// manPage renders the man page of one command in roff (man macros).
func manPage(cmd *cobra.Command) []byte {
	var b bytes.Buffer
	name := strings.ReplaceAll(cmd.CommandPath(), " ", "-")
	fmt.Fprintf(&b, ".TH %q \"1\" \"\" \"cairn\" \"cairn manual\"\n", strings.ToUpper(name))
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", roffEscape(name), roffEscape(cmd.Short))

	fmt.Fprintf(&b, ".SH SYNOPSIS\n")
	if cmd.Runnable() {
		fmt.Fprintf(&b, ".B %s\n", roffEscape(cmd.CommandPath()))
		if _, args, ok := strings.Cut(cmd.Use, " "); ok {
			fmt.Fprintf(&b, "%s\n", roffEscape(args))
		}
	}
	if cmd.HasAvailableSubCommands() {
		if cmd.Runnable() {
			fmt.Fprintf(&b, ".br\n")
		}
		fmt.Fprintf(&b, ".B %s\n\\fIcommand\\fR [options]\n", roffEscape(cmd.CommandPath()))
	}

	fmt.Fprintf(&b, ".SH DESCRIPTION\n")
	desc := cmd.Long
	if desc == "" {
		desc = cmd.Short
	}
	writeRoffText(&b, desc)

	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(&b, ".SH COMMANDS\n")
		for _, sub := range cmd.Commands() {
			if !sub.IsAvailableCommand() || sub.Name() == "help" {
				continue
			}
			fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s\n", roffEscape(sub.Name()), roffEscape(sub.Short))
		}
	}
	writeRoffFlags(&b, "OPTIONS", cmd.NonInheritedFlags())
	writeRoffFlags(&b, "OPTIONS INHERITED FROM PARENT COMMANDS", cmd.InheritedFlags())
	if cmd.Example != "" {
		fmt.Fprintf(&b, ".SH EXAMPLES\n.PP\n.RS\n.nf\n")
		for line := range strings.Lines(strings.TrimRight(cmd.Example, "\n")) {
			fmt.Fprintf(&b, "%s\n", roffEscape(strings.TrimRight(strings.TrimPrefix(line, "  "), "\n")))
		}
		fmt.Fprintf(&b, ".fi\n.RE\n")
	}

	var related []string
	if cmd.HasParent() {
		related = append(related, cmd.Parent().CommandPath())
	}
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() && sub.Name() != "help" {
			related = append(related, sub.CommandPath())
		}
	}
	if len(related) > 0 {
		fmt.Fprintf(&b, ".SH SEE ALSO\n")
		for i, r := range related {
			sep := ","
			if i == len(related)-1 {
				sep = ""
			}
			fmt.Fprintf(&b, "\\fB%s\\fR(1)%s\n", roffEscape(strings.ReplaceAll(r, " ", "-")), sep)
		}
	}
	return b.Bytes()
}

// writeRoffText writes paragraphs of plain text; indented lines (examples
// within a description) are kept as they are.
func writeRoffText(b *bytes.Buffer, text string) {
	for para := range strings.SplitSeq(strings.TrimSpace(text), "\n\n") {
		lines := strings.Split(para, "\n")
		preformatted := slices.ContainsFunc(lines, func(l string) bool {
			return strings.HasPrefix(l, " ") || strings.HasPrefix(l, "$") || strings.HasPrefix(l, "#")
		})
		if preformatted {
			fmt.Fprintf(b, ".PP\n.nf\n")
			for _, l := range lines {
				fmt.Fprintf(b, "%s\n", roffEscape(l))
			}
			fmt.Fprintf(b, ".fi\n")
			continue
		}
		fmt.Fprintf(b, ".PP\n%s\n", roffEscape(strings.Join(lines, "\n")))
	}
}

// writeRoffFlags writes a section listing flags, if there are any.
func writeRoffFlags(b *bytes.Buffer, title string, flags *pflag.FlagSet) {
	var entries []*pflag.Flag
	flags.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Name != "help" {
			entries = append(entries, f)
		}
	})
	if len(entries) == 0 {
		return
	}
	fmt.Fprintf(b, ".SH %s\n", title)
	for _, f := range entries {
		names := "\\fB\\-\\-" + roffEscape(f.Name) + "\\fR"
		if f.Shorthand != "" {
			names = "\\fB\\-" + roffEscape(f.Shorthand) + "\\fR, " + names
		}
		varName, usage := pflag.UnquoteUsage(f)
		if varName != "" {
			names += " \\fI" + roffEscape(varName) + "\\fR"
		}
		switch {
		case f.DefValue == "" || f.DefValue == "false" || f.DefValue == "[]" || f.DefValue == "0":
		case f.Value.Type() == "string":
			usage += fmt.Sprintf(" (default %q)", f.DefValue)
		default:
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(b, ".TP\n%s\n%s\n", names, roffEscape(usage))
	}
}

// roffEscape makes text safe in a roff document: backslashes and hyphens
// escaped, and no line starting with a control character.
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}
