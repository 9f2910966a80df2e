package bench

import (
	"crypto/tls"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// Globals is what the commands read of cairn's global flags, which
// internal/cli declares.
type Globals interface {
	// Endpoints is --endpoints.
	Endpoints() []string
	// ClientConfig is the client configuration of the flags. It fails on
	// a bad --write-out first, so that a bad format changes nothing.
	ClientConfig(cmd *cobra.Command) (client.Config, error)
	// WithClient runs f with a client of the flags, closed afterwards.
	WithClient(cmd *cobra.Command, f func(c *client.Client) error) error
	// Printer prints in the format of --write-out and --hex.
	Printer(cmd *cobra.Command) *printer.Printer
	// TLSConfig is the TLS settings of the flags, nil for plaintext.
	TLSConfig() (*tls.Config, error)
	// DialTimeout and CommandTimeout are --dial-timeout and
	// --command-timeout.
	DialTimeout() time.Duration
	CommandTimeout() time.Duration
}
