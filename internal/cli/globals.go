package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// Environment variable prefixes for the global flags: CAIRN_ENDPOINTS wins
// over ETCDCTL_ENDPOINTS, and a flag on the command line over both.
var envPrefixes = []string{"CAIRN_", "ETCDCTL_"}

// globalOptions are etcdctl's global flags, read through viper so that each
// can also come from the environment.
type globalOptions struct {
	v *viper.Viper
}

// addGlobalFlags declares the global flags on root and returns their reader.
func addGlobalFlags(root *cobra.Command) *globalOptions {
	fs := root.PersistentFlags()
	fs.StringSlice("endpoints", []string{"127.0.0.1:2379"}, "gRPC endpoints")
	fs.Duration("dial-timeout", client.DefaultDialTimeout, "dial timeout for client connections")
	fs.Duration("command-timeout", 5*time.Second, "timeout for short running command (excluding dial timeout)")
	fs.Duration("keepalive-time", client.DefaultKeepAliveTime, "keepalive time for client connections")
	fs.Duration("keepalive-timeout", client.DefaultKeepAliveTimeout, "keepalive timeout for client connections")
	fs.String("user", "", "username[:password] for authentication (prompt if password is not supplied)")
	fs.String("password", "", "password for authentication (if this option is used, --user option shouldn't include password)")
	fs.String("auth-jwt-token", "", "JWT token used for authentication (if this option is used, --user and --password should not be set)")
	fs.String("cacert", "", "verify certificates of TLS-enabled secure servers using this CA bundle")
	fs.String("cert", "", "identify secure client using this TLS certificate file")
	fs.String("key", "", "identify secure client using this TLS key file")
	fs.Bool("insecure-skip-tls-verify", false, "skip server certificate verification (CAUTION: this option should be enabled only for testing purposes)")
	fs.Bool("insecure-transport", true, "disable transport security for client connections")
	fs.Int("max-request-bytes", 0, "client-side request send limit in bytes (if 0, it defaults to 2.0 MiB (2 * 1024 * 1024).)")
	fs.Int("max-recv-bytes", 0, "client-side response receive limit in bytes (if 0, it defaults to \"math.MaxInt32\")")
	fs.StringP("write-out", "w", "simple", "set the output format (fields, json, protobuf, simple, table)")
	fs.Bool("hex", false, "print byte strings as hex encoded strings")
	fs.Bool("debug", false, "enable client-side debug logging")

	v := viper.New()
	fs.VisitAll(func(f *pflag.Flag) {
		_ = v.BindPFlag(f.Name, f)
		env := strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		names := []string{f.Name}
		for _, prefix := range envPrefixes {
			names = append(names, prefix+env)
		}
		_ = v.BindEnv(names...)
	})
	return &globalOptions{v: v}
}

// endpoints returns --endpoints, split on commas also when it comes from
// the environment.
func (g *globalOptions) endpoints() []string {
	var eps []string
	for _, item := range g.v.GetStringSlice("endpoints") {
		for ep := range strings.SplitSeq(item, ",") {
			if ep = strings.TrimSpace(ep); ep != "" {
				eps = append(eps, ep)
			}
		}
	}
	return eps
}

func (g *globalOptions) commandTimeout() time.Duration {
	return g.v.GetDuration("command-timeout")
}

// commandContext bounds a short command by --command-timeout.
func (g *globalOptions) commandContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), g.commandTimeout())
}

// printer returns the printer for --write-out and --hex.
func (g *globalOptions) printer(cmd *cobra.Command) *printer.Printer {
	return printer.New(cmd.OutOrStdout(), g.v.GetString("write-out"), g.v.GetBool("hex"))
}

// validateOutputFormat fails on a --write-out value no command knows.
func (g *globalOptions) validateOutputFormat() error {
	switch g.v.GetString("write-out") {
	case printer.FormatSimple, printer.FormatJSON, printer.FormatFields, printer.FormatTable, printer.FormatProtobuf:
		return nil
	}
	return cmderr.WithCode(cmderr.ExitBadFeature, errors.New("unsupported output format"))
}

// clientConfig builds the client configuration the global flags describe.
func (g *globalOptions) clientConfig(cmd *cobra.Command) (client.Config, error) {
	cfg := client.Config{
		Endpoints:          g.endpoints(),
		DialTimeout:        g.v.GetDuration("dial-timeout"),
		KeepAliveTime:      g.v.GetDuration("keepalive-time"),
		KeepAliveTimeout:   g.v.GetDuration("keepalive-timeout"),
		MaxCallSendMsgSize: g.v.GetInt("max-request-bytes"),
		MaxCallRecvMsgSize: g.v.GetInt("max-recv-bytes"),
		Token:              g.v.GetString("auth-jwt-token"),
	}
	if g.v.GetBool("debug") {
		cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if err := g.addCredentials(cmd, &cfg); err != nil {
		return cfg, err
	}
	tlsCfg, err := g.tlsConfig()
	if err != nil {
		return cfg, cmderr.BadArgs("%v", err)
	}
	cfg.TLS = tlsCfg
	return cfg, nil
}

// addCredentials fills in the username and password, prompting for the
// password when --user names no password and --password is not given.
func (g *globalOptions) addCredentials(cmd *cobra.Command, cfg *client.Config) error {
	user, password := g.v.GetString("user"), g.v.GetString("password")
	if user == "" {
		if password != "" {
			return cmderr.BadArgs("username is empty")
		}
		return nil
	}
	if cfg.Token != "" {
		return cmderr.BadArgs("--user and --auth-jwt-token cannot be given together")
	}
	if password == "" {
		name, pass, found := strings.Cut(user, ":")
		if found {
			user, password = name, pass
		} else {
			var err error
			if password, err = readPassword(cmd, "Password: "); err != nil {
				return cmderr.BadArgs("%v", err)
			}
		}
	}
	cfg.Username, cfg.Password = user, password
	return nil
}

// tlsConfig returns the TLS settings of the flags, or nil for plaintext.
func (g *globalOptions) tlsConfig() (*tls.Config, error) {
	files := client.TLSFiles{
		CAFile:             g.v.GetString("cacert"),
		CertFile:           g.v.GetString("cert"),
		KeyFile:            g.v.GetString("key"),
		InsecureSkipVerify: g.v.GetBool("insecure-skip-tls-verify"),
	}
	if files.Empty() && g.v.GetBool("insecure-transport") {
		return nil, nil
	}
	return files.Config()
}

// newClient connects to the cluster the global flags name.
func (g *globalOptions) newClient(cmd *cobra.Command) (*client.Client, error) {
	cfg, err := g.clientConfig(cmd)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg)
	if err != nil {
		return nil, cmderr.WithCode(cmderr.ExitBadConnection, err)
	}
	return c, nil
}

// withClient runs f with a client for the global flags, closed afterwards.
// It first checks the output format, so that a bad one changes nothing.
func (g *globalOptions) withClient(cmd *cobra.Command, f func(c *client.Client) error) error {
	if err := g.validateOutputFormat(); err != nil {
		return err
	}
	c, err := g.newClient(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	err = f(c)
	var loginErr *client.AuthenticationError
	if errors.As(err, &loginErr) {
		// The client could not log in: a connection problem, for etcdctl.
		return cmderr.WithCode(cmderr.ExitBadConnection, err)
	}
	return err
}
