package cli

import (
	"testing"

	"github.com/spf13/cobra"
)

// TestEveryCommandHasExamples walks the command tree: the help of every
// command that runs shows examples. Commands that only group subcommands
// list those instead.
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.Example == "" {
			t.Errorf("%q has no Example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand())
}
