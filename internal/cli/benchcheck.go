package cli

import (
	"crypto/tls"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/bench"
	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// addBenchCommands attaches bench, of internal/bench.
func addBenchCommands(root *cobra.Command, g *globalOptions) {
	addToGroup(root, utilityGroup, bench.NewBenchCommand(benchGlobals{g}))
}

// addCheckCommands attaches check perf and check datascale, of
// internal/bench.
func addCheckCommands(root *cobra.Command, g *globalOptions) {
	addToGroup(root, utilityGroup, bench.NewCheckCommand(benchGlobals{g}))
}

// benchGlobals gives the commands of internal/bench the global flags.
type benchGlobals struct{ g *globalOptions }

func (b benchGlobals) Endpoints() []string { return b.g.endpoints() }

func (b benchGlobals) ClientConfig(cmd *cobra.Command) (client.Config, error) {
	if err := b.g.validateOutputFormat(); err != nil {
		return client.Config{}, err
	}
	return b.g.clientConfig(cmd)
}

func (b benchGlobals) WithClient(cmd *cobra.Command, f func(c *client.Client) error) error {
	return b.g.withClient(cmd, f)
}

func (b benchGlobals) Printer(cmd *cobra.Command) *printer.Printer { return b.g.printer(cmd) }
func (b benchGlobals) TLSConfig() (*tls.Config, error)             { return b.g.tlsConfig() }
func (b benchGlobals) DialTimeout() time.Duration                  { return b.g.v.GetDuration("dial-timeout") }
func (b benchGlobals) CommandTimeout() time.Duration               { return b.g.commandTimeout() }
