package serve

import (
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/cairnkv/cairn/internal/api"
	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
	"github.com/cairnkv/cairn/internal/etcdlog"
	"github.com/cairnkv/cairn/internal/featuregate"
	"github.com/cairnkv/cairn/internal/gcpace"
	"github.com/cairnkv/cairn/internal/listen"
	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/server"
	"github.com/cairnkv/cairn/internal/servertls"
	"github.com/cairnkv/cairn/internal/version"
)

// NewCommand is `cairn serve`: one member, with etcd's flags. Every flag
// can also come from --config-file (YAML, the same keys) or from a
// CAIRN_<FLAG> environment variable.
func NewCommand() *cobra.Command {
	v := viper.New()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a cairn member (etcd's server flags)",
		Long: `Run one member of a cairn cluster. A bare "cairn serve" starts a single-member
cluster on 127.0.0.1:2379 (clients) and 127.0.0.1:2380 (peers) with its data in
default.cairn (or default.etcd, where that exists and default.cairn does not), like
a bare etcd. Every flag of etcd 3.7.3 is accepted; those marked "no effect in cairn"
are logged as such at start when given. With --config-file (etcd's YAML), the file
is the whole configuration: other flags and environment variables are ignored.`,
		Example: `  cairn serve
  cairn serve --name m1 --data-dir /var/lib/cairn/m1 \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster m1=http://127.0.0.1:2380,m2=http://127.0.0.1:22380,m3=http://127.0.0.1:32380`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := serveConfig(cmd, v)
			if err != nil {
				return err
			}
			return runServe(cfg)
		},
	}
	f := cmd.Flags()
	f.String("config-file", "", "path to the server configuration file (etcd's YAML: the flags' names as keys); other flags and environment variables are then ignored")
	f.String("name", memberconfig.DefaultName, "human-readable name for this member")
	f.String("data-dir", "", "path to the data directory (default \"<name>.cairn\")")
	f.String("listen-client-urls", "http://127.0.0.1:2379", "list of URLs to listen on for client traffic")
	f.String("advertise-client-urls", "", "list of this member's client URLs to advertise to the rest of the cluster (default: --listen-client-urls)")
	f.String("listen-peer-urls", "http://127.0.0.1:2380", "list of URLs to listen on for peer traffic")
	f.String("initial-advertise-peer-urls", "", "list of this member's peer URLs to advertise to the rest of the cluster (default: --listen-peer-urls)")
	f.String("initial-cluster", "", "initial cluster configuration for bootstrapping, name=url,... (default: this member alone)")
	f.String("initial-cluster-state", "new", "initial cluster state ('new' or 'existing')")
	f.String("initial-cluster-token", "etcd-cluster", "initial cluster token for the cluster during bootstrap")
	f.Uint64("snapshot-count", memberconfig.DefaultSnapshotCount, "number of committed transactions to trigger a snapshot to disk")
	f.Uint("heartbeat-interval", 100, "time (in milliseconds) of a heartbeat interval")
	f.Uint("election-timeout", 1000, "time (in milliseconds) for an election to timeout")
	f.Uint64("snapshot-catchup-entries", memberconfig.DefaultCatchUpEntries, "number of entries for a slow follower to catch up after compacting the raft storage entries")
	f.Int64("quota-backend-bytes", memberconfig.DefaultQuotaBackendBytes, "raise alarms when backend size exceeds the given quota")
	f.Uint("max-request-bytes", memberconfig.DefaultMaxRequestBytes, "maximum client request size in bytes the server will accept")
	f.Uint("max-txn-ops", memberconfig.DefaultMaxTxnOps, "maximum number of operations permitted in a transaction")
	f.Bool("strict-reconfig-check", true, "reject reconfiguration requests that would cause quorum loss")
	f.String("feature-gates", "", featuregate.Help())
	f.Duration("corrupt-check-time", 0, "Duration of time between cluster corruption check passes.")
	f.Duration("compact-hash-check-time", server.DefaultCompactHashCheckTime, "Duration of time between leader checks followers compaction hashes.")
	f.String("auto-compaction-mode", "periodic", "interpret 'auto-compaction-retention' one of: periodic|revision")
	f.String("auto-compaction-retention", "0", "auto compaction retention (0 means disable)")
	f.String("auth-token", memberconfig.DefaultAuthToken, "specify a v3 authentication token type and its options ('simple' or 'jwt,pub-key=PATH,priv-key=PATH,sign-method=ALG[,ttl=DURATION]')")
	f.Uint("auth-token-ttl", 300, "the lifetime in seconds of the auth token")
	f.Int("bcrypt-cost", auth.DefaultBcryptCost, "specify bcrypt algorithm cost factor for auth password hashing (4 to 31)")
	f.String("cert-file", "", "path to the client server TLS cert file (for https client URLs)")
	f.String("key-file", "", "path to the client server TLS key file")
	f.Bool("client-cert-auth", false, "require client certificates; with auth enabled, a request without a token runs as the user named by the certificate's common name")
	f.String("trusted-ca-file", "", "path to the client server TLS trusted CA cert file (client certificates are then required)")
	f.Bool("auto-tls", false, "client TLS using a self-signed certificate generated into <data-dir>/fixtures/client")
	f.String("peer-cert-file", "", "path to the peer server TLS cert file, also presented to the peers this member dials")
	f.String("peer-key-file", "", "path to the peer server TLS key file")
	f.Bool("peer-client-cert-auth", false, "require client certificates from peers")
	f.String("peer-trusted-ca-file", "", "path to the peer server TLS trusted CA file (peer certificates are then required and verified)")
	f.Bool("peer-auto-tls", false, "peer TLS using a self-signed certificate generated into <data-dir>/fixtures/peer if --peer-cert-file and --peer-key-file are not given")
	f.String("tls-min-version", servertls.DefaultMinVersion, "minimum TLS version: TLS1.2 or TLS1.3")
	f.String("tls-max-version", "", "maximum TLS version: TLS1.2 or TLS1.3 (empty: Go's default)")
	f.String("cipher-suites", "", "comma-separated list of TLS cipher suites for clients and peers, by their Go names (empty: Go's default)")
	f.Bool("enable-pprof", false, "enable runtime profiling data via HTTP server. Address is at client URL + \"/debug/pprof/\"")
	f.String("logger", "zap", "Currently only supports 'zap' for structured logging.")
	f.String("log-outputs", "default", "Specify 'stdout' or 'stderr', or a list of comma separated output targets (files).")
	f.String("log-format", "json", "Configures log format. Only supports json, console (and cairn's text).")
	f.String("log-level", "info", "Configures log level. Only supports debug, info, warn, error, panic, or fatal.")
	f.String("metrics", "basic", "Set level of detail for exported metrics, specify 'extensive' to include server side grpc histogram metrics.")
	f.String("listen-metrics-urls", "", "List of URLs to listen on for the /metrics and /health endpoints. For https, the client URL TLS info is used.")
	addEtcdServeFlags(f) // flags.go
	return cmd
}

// serveConfig reads the flags and the CAIRN_* and ETCD_* variables (a flag
// given on the command line wins), or, as etcd does, the config file alone
// when --config-file is given.
func serveConfig(cmd *cobra.Command, v *viper.Viper) (memberconfig.Config, error) {
	used, unknown := bindServeEnv(cmd, v, os.Environ())
	if err := v.BindPFlags(cmd.Flags()); err != nil {
		return memberconfig.Config{}, err
	}
	path := v.GetString("config-file")
	var ignoredKeys []string
	if path != "" {
		var err error
		if v, ignoredKeys, err = readConfigFile(path, NewCommand().Flags()); err != nil {
			return memberconfig.Config{}, err
		}
		used, unknown = nil, nil
	}
	rotation, err := logRotationFrom(v) // logrotate.go
	if err != nil {
		return memberconfig.Config{}, err
	}
	logger, err := newServerLogger(v.GetString("logger"), v.GetString("log-outputs"), v.GetString("log-format"), v.GetString("log-level"), rotation)
	if err != nil {
		return memberconfig.Config{}, err
	}
	if path != "" {
		logger.Info("loaded server configuration, other configuration command line flags and environment variables will be ignored if provided", "path", path)
	}
	for _, key := range ignoredKeys {
		logger.Warn("--config-file: ignoring a key of etcd's v2 proxy, which etcd 3 ignores too", "key", key)
	}
	for _, kv := range used {
		name, value, _ := strings.Cut(kv, "=")
		logger.Info("recognized and used environment variable", "variable-name", name, "variable-value", value)
	}
	for _, kv := range unknown {
		logger.Warn("unrecognized environment variable", "environment-variable", kv)
	}
	features, err := featuregate.Parse(v.GetString("feature-gates"))
	if err != nil {
		return memberconfig.Config{}, fmt.Errorf("invalid value %q for flag -feature-gates: %w", v.GetString("feature-gates"), err)
	}
	cfg := memberconfig.Config{
		Name:                     v.GetString("name"),
		DataDir:                  v.GetString("data-dir"),
		ListenClientURLs:         splitList(v.GetString("listen-client-urls")),
		AdvertiseClientURLs:      splitList(v.GetString("advertise-client-urls")),
		ListenPeerURLs:           splitList(v.GetString("listen-peer-urls")),
		InitialAdvertisePeerURLs: splitList(v.GetString("initial-advertise-peer-urls")),
		InitialCluster:           v.GetString("initial-cluster"),
		InitialClusterState:      v.GetString("initial-cluster-state"),
		InitialClusterToken:      v.GetString("initial-cluster-token"),
		SnapshotCount:            v.GetUint64("snapshot-count"),
		SnapshotCatchUpEntries:   v.GetUint64("snapshot-catchup-entries"),
		HeartbeatInterval:        time.Duration(v.GetUint("heartbeat-interval")) * time.Millisecond,
		ElectionTimeout:          time.Duration(v.GetUint("election-timeout")) * time.Millisecond,
		QuotaBackendBytes:        v.GetInt64("quota-backend-bytes"),
		MaxRequestBytes:          int(v.GetUint("max-request-bytes")),
		MaxTxnOps:                int(v.GetUint("max-txn-ops")),
		AutoCompactionMode:       v.GetString("auto-compaction-mode"),
		AutoCompactionRetention:  v.GetString("auto-compaction-retention"),
		AuthToken:                v.GetString("auth-token"),
		AuthTokenTTL:             time.Duration(v.GetUint("auth-token-ttl")) * time.Second,
		BcryptCost:               v.GetInt("bcrypt-cost"),
		EnablePprof:              v.GetBool("enable-pprof"),
		NoStrictReconfigCheck:    !v.GetBool("strict-reconfig-check"),
		Features:                 features,
		CorruptCheckTime:         v.GetDuration("corrupt-check-time"),
		CompactHashCheckTime:     v.GetDuration("compact-hash-check-time"),
		ClientTLS: servertls.Files{
			CertFile:       v.GetString("cert-file"),
			KeyFile:        v.GetString("key-file"),
			TrustedCAFile:  v.GetString("trusted-ca-file"),
			ClientCertAuth: v.GetBool("client-cert-auth"),
			AutoTLS:        v.GetBool("auto-tls"),
		},
		PeerTLS: servertls.Files{
			CertFile:       v.GetString("peer-cert-file"),
			KeyFile:        v.GetString("peer-key-file"),
			TrustedCAFile:  v.GetString("peer-trusted-ca-file"),
			ClientCertAuth: v.GetBool("peer-client-cert-auth"),
			AutoTLS:        v.GetBool("peer-auto-tls"),
		},
		TLS: servertls.Versions{
			Min:          v.GetString("tls-min-version"),
			Max:          v.GetString("tls-max-version"),
			CipherSuites: splitList(v.GetString("cipher-suites")),
		},
		Logger: logger,
	}
	cfg.Metrics, cfg.ListenMetricsURLs = v.GetString("metrics"), splitList(v.GetString("listen-metrics-urls"))
	if cfg.DataDir == "" {
		cfg.DataDir = defaultDataDir(cfg.Name, logger)
	}
	if err := etcdServeConfig(v, &cfg, path != "", logger); err != nil {
		return memberconfig.Config{}, err
	}
	return cfg, nil
}

// bindServeEnv binds each flag to CAIRN_<FLAG> and ETCD_<FLAG> (a CAIRN_
// variable wins), so that etcd's runbooks, which export ETCD_NAME,
// ETCD_INITIAL_CLUSTER and the like, work unchanged. It returns the
// variables of environ that set a flag, and the ETCD_ ones that name none
// (etcd warns of those).
func bindServeEnv(cmd *cobra.Command, v *viper.Viper, environ []string) (used, unknown []string) {
	flags := map[string]bool{}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		env := strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		flags[env] = true
		v.BindEnv(f.Name, "CAIRN_"+env, "ETCD_"+env)
	})
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		for _, prefix := range []string{"CAIRN_", "ETCD_"} {
			rest, ok := strings.CutPrefix(name, prefix)
			switch {
			case !ok:
			case flags[rest]:
				used = append(used, kv)
			case prefix == "ETCD_":
				unknown = append(unknown, kv)
			}
		}
	}
	return used, unknown
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// newServerLogger is the member's logger, with etcd's flags: --logger zap
// (the only one), --log-outputs (default, stderr, stdout or files, comma
// separated), --log-format json or console in etcd's layouts (or cairn's
// own text), --log-level; with rotation (--enable-log-rotation), the
// file output is rotated.
func newServerLogger(loggerName, outputs, format, level string, rotation *logRotation) (*slog.Logger, error) {
	if loggerName != "zap" {
		return nil, fmt.Errorf("unknown logger option %q", loggerName)
	}
	lvl, err := etcdlog.ParseLevel(level)
	if err != nil {
		return nil, err
	}
	var ws []io.Writer
	for _, o := range splitList(outputs) {
		switch o {
		case "default", "stderr":
			ws = append(ws, os.Stderr)
		case "stdout":
			ws = append(ws, os.Stdout)
		default:
			if rotation != nil {
				f, err := rotation.open(o)
				if err != nil {
					return nil, err
				}
				ws = append(ws, f) // open for the life of the process
				continue
			}
			f, err := os.OpenFile(o, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			if err != nil {
				return nil, fmt.Errorf("open sink %q: %w", o, err)
			}
			ws = append(ws, f) // open for the life of the process
		}
	}
	w := io.MultiWriter(ws...)
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl})), nil
	}
	f, err := etcdlog.ParseFormat(format)
	if err != nil {
		return nil, err
	}
	return slog.New(etcdlog.NewHandler(w, f, lvl)), nil
}

// gcRoom is the least allocation a member makes room for between garbage
// collections (see gcpace): some 0.5 s of puts at full speed, so a burst of
// writes of that length meets no collection. Against 64 MB it took the put
// p99 of a 20,000-put burst from 0.82 to 0.68 of etcd's, for 46 MB more
// peak RSS (153 MB), which an idle member gives back; in a steady load the
// two are alike (BENCHMARKS.md, "Memory and garbage collection"). A heap of
// 128 MB or more live keeps Go's own pace.
const gcRoom = 128 << 20

// gcQuietRoom is the room while the member serves fewer than a hundred
// requests a second (gcpace.FollowLoad): watchers catching up on a long
// history allocate as fast as a burst of puts, and with gcRoom they held
// 100 MB more resident for no gain (BENCHMARKS.md, "Reconnect storm").
const gcQuietRoom = 32 << 20

// runServe starts the member and its client API and runs until SIGINT or
// SIGTERM, then stops both cleanly.
func runServe(cfg memberconfig.Config) error {
	gcpace.KeepRoom(gcRoom)
	s, err := server.Start(cfg)
	if err != nil {
		return err // alone on stderr, as etcd's tests of a refused start want it
	}
	go gcpace.FollowLoad(gcQuietRoom, s.StoreStats().Operations, s.Done())
	logStart(s.Config())
	api.ProgressNotifyInterval = s.Config().WatchProgressNotifyInterval
	a := api.New(s, cfg.Logger)
	if err := a.Serve(s.Config().ListenClientURLs); err != nil {
		s.Stop()
		return err
	}
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigc)
	ready := s.Ready()
	for stop := false; !stop; {
		select {
		case <-ready:
			// The line etcd's tools and tests wait for.
			cfg.Logger.Info("ready to serve client requests", "urls", s.Config().ListenClientURLs)
			logServing(s.Config())
			ready = nil
		case sig := <-sigc:
			cfg.Logger.Info("shutting down", "signal", sig.String())
			s.HandOffLeadership()
			stop = true
		case <-s.Done():
			stop = true
		}
	}
	a.Stop()
	s.Stop()
	if err := s.Err(); err != nil {
		return err
	}
	cfg.Logger.Info("stopped cleanly")
	return nil
}

// logStart is etcd's "starting an etcd server" line, with the settings
// operators and etcd's tests read from it (logged once the member has
// started, where etcd logs it before).
func logStart(c memberconfig.Config) {
	c.Logger.Info("starting an etcd server", "etcd-version", version.ServerVersion, "cairn-version", version.Version,
		"name", c.Name, "data-dir", c.DataDir, "wal-dir", c.WALDir, "force-new-cluster", c.ForceNewCluster,
		"heartbeat-interval", c.HeartbeatInterval.String(), "election-timeout", c.ElectionTimeout.String(),
		"initial-election-tick-advance", !c.NoInitialElectionTickAdvance, "snapshot-count", c.SnapshotCount,
		"max-wals", c.MaxWALs, "max-snapshots", c.MaxSnapshots, "snapshot-catchup-entries", c.SnapshotCatchUpEntries,
		"initial-advertise-peer-urls", c.InitialAdvertisePeerURLs, "listen-peer-urls", c.ListenPeerURLs,
		"advertise-client-urls", c.AdvertiseClientURLs, "listen-client-urls", c.ListenClientURLs,
		"cors", c.CORS, "host-whitelist", c.HostWhitelist, "initial-cluster", c.InitialCluster,
		"initial-cluster-state", c.InitialClusterState, "initial-cluster-token", c.InitialClusterToken,
		"quota-backend-bytes", c.QuotaBackendBytes, "max-request-bytes", c.MaxRequestBytes,
		"max-concurrent-streams", c.MaxConcurrentStreams, "pre-vote", !c.NoPreVote, "max-learners", c.LearnerLimit(),
		"v2-deprecation", "write-only")
	if c.QuotaBackendBytes > memberconfig.MaxQuotaBackendBytes { // etcd's warning; the quota stands
		c.Logger.Warn("quota exceeds the maximum value", "quota-name", "v3-applier",
			"quota-size-bytes", c.QuotaBackendBytes, "quota-size", printer.HumanBytes(c.QuotaBackendBytes),
			"quota-maximum-size-bytes", int64(memberconfig.MaxQuotaBackendBytes), "quota-maximum-size", printer.HumanBytes(memberconfig.MaxQuotaBackendBytes))
	}
}

// logServing is etcd's line for each client URL once the member serves
// clients.
func logServing(c memberconfig.Config) {
	traffic := "grpc+http"
	if len(c.ListenClientHTTPURLs) > 0 {
		traffic = "grpc"
	}
	for _, group := range []struct {
		urls    []string
		traffic string
	}{{c.ListenClientURLs, traffic}, {c.ListenClientHTTPURLs, "http"}} {
		for _, u := range group.urls {
			if pu, err := url.Parse(u); err == nil && listen.Secure(pu.Scheme) {
				c.Logger.Info("serving client traffic securely", "traffic", group.traffic, "address", u)
			} else {
				c.Logger.Info("serving client traffic insecurely; this is strongly discouraged!", "traffic", group.traffic, "address", u)
			}
		}
	}
}
