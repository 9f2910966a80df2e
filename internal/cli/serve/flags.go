package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/cairnkv/cairn/internal/discovery"
	"github.com/cairnkv/cairn/internal/memberconfig"
)

// noEffect are the flags of etcd that tune what cairn does differently or
// not at all: they are accepted with etcd's validation and, when given,
// logged once at start with the reason. `serve --help` says so too.
var noEffect = map[string]string{
	"raft-read-timeout":                 "cairn's peer connections have timeouts of their own",
	"raft-write-timeout":                "cairn's peer connections have timeouts of their own",
	"client-cert-file":                  "cairn's JSON gateway reaches the gRPC services in process, with no client connection",
	"client-key-file":                   "cairn's JSON gateway reaches the gRPC services in process, with no client connection",
	"downgrade-check-time":              "cairn checks a downgrade's completion whenever a member's version changes",
	"enable-distributed-tracing":        "cairn has no distributed tracing",
	"distributed-tracing-address":       "cairn has no distributed tracing",
	"distributed-tracing-service-name":  "cairn has no distributed tracing",
	"distributed-tracing-instance-id":   "cairn has no distributed tracing",
	"distributed-tracing-sampling-rate": "cairn has no distributed tracing",
	"discovery-srv-name":                "cairn has no DNS discovery",
}

// v2DeprecationLevels are the values etcd 3.7's --v2-deprecation takes
// (its help lists not-yet too, which it refuses); it enforces its default
// whatever is given, and so does cairn, which has no v2 store.
var v2DeprecationLevels = []string{"write-only", "write-only-skip-check", "write-only-drop-data", "gone"}

// defaultLogRotation is etcd's default --log-rotation-config-json.
const defaultLogRotation = `{"maxsize": 100, "maxage": 0, "maxbackups": 0, "localtime": false, "compress": false}`

// addEtcdServeFlags adds the rest of the flags of etcd 3.7.3's `etcd
// --help`, with etcd's defaults.
func addEtcdServeFlags(f *pflag.FlagSet) {
	help := func(name, usage string) string {
		if why, ok := noEffect[name]; ok {
			return usage + " (no effect in cairn: " + why + ")"
		}
		return usage
	}
	f.String("wal-dir", "", "path to the dedicated wal directory")
	f.Bool("force-new-cluster", false, "force to create a new one-member cluster: restart this member alone with its data, the other members removed")
	f.Bool("initial-election-tick-advance", true, "whether to fast-forward initial election ticks on boot for faster election (in cairn: a member alone in its cluster campaigns at once)")
	f.String("listen-client-http-urls", "", "list of URLs to listen on for http only client traffic; enabling this flag removes http services from --listen-client-urls")
	f.Uint("max-snapshots", memberconfig.DefaultMaxSnapshots, "maximum number of snapshot files to retain (0 is unlimited); deprecated in v3.6")
	f.Uint("max-wals", memberconfig.DefaultMaxWALs, "maximum number of wal files to retain (0 is unlimited)")
	f.Bool("memory-mlock", false, "enable to enforce etcd pages (in particular bbolt) to stay in RAM")
	f.String("backend-bbolt-freelist-type", "map", "the type of freelist that the boltdb backend uses (array and map are supported types)")
	f.Duration("backend-batch-interval", 0, "the maximum time before committing the backend transaction (0: 100ms)")
	f.Int("backend-batch-limit", 0, "the maximum operations before committing the backend transaction (0: 10000)")
	f.Uint32("max-concurrent-streams", math.MaxUint32, "maximum concurrent streams that each client can open at a time")
	f.Duration("grpc-keepalive-min-time", memberconfig.DefaultKeepAliveMinTime, "minimum duration interval that a client should wait before pinging server")
	f.Duration("grpc-keepalive-interval", memberconfig.DefaultKeepAliveInterval, "frequency duration of server-to-client ping to check if a connection is alive (0 to disable)")
	f.Duration("grpc-keepalive-timeout", memberconfig.DefaultKeepAliveTimeout, "additional duration of wait before closing a non-responsive connection (0 to disable)")
	f.Bool("socket-reuse-port", false, "enable to set socket option SO_REUSEPORT on listeners allowing rebinding of a port already in use")
	f.Bool("socket-reuse-address", false, "enable to set socket option SO_REUSEADDR on listeners allowing binding to an address in TIME_WAIT state")
	f.Bool("enable-grpc-gateway", true, "enable the JSON gateway (/v3/...) on the client URLs")
	f.Duration("raft-read-timeout", 5*time.Second, help("raft-read-timeout", "read timeout set on each rafthttp connection"))
	f.Duration("raft-write-timeout", 5*time.Second, help("raft-write-timeout", "write timeout set on each rafthttp connection"))
	f.String("discovery", "", "v2 discovery URL (removed in etcd 3.7, which refuses it too; refused if given)")
	f.String("discovery-proxy", "", "HTTP proxy to use for traffic to the v2 discovery service (removed in etcd 3.7; refused if given)")
	f.String("discovery-token", "", "V3 discovery: discovery token for the etcd cluster to be bootstrapped")
	f.String("discovery-endpoints", "", "V3 discovery: list of gRPC endpoints of the discovery service")
	f.Duration("discovery-dial-timeout", 2*time.Second, help("discovery-dial-timeout", "V3 discovery: dial timeout for client connections"))
	f.Duration("discovery-request-timeout", 5*time.Second, help("discovery-request-timeout", "V3 discovery: timeout for discovery requests (excluding dial timeout)"))
	f.Duration("discovery-keepalive-time", 2*time.Second, help("discovery-keepalive-time", "V3 discovery: keepalive time for client connections"))
	f.Duration("discovery-keepalive-timeout", 6*time.Second, help("discovery-keepalive-timeout", "V3 discovery: keepalive timeout for client connections"))
	f.Bool("discovery-insecure-transport", true, help("discovery-insecure-transport", "V3 discovery: disable transport security for client connections"))
	f.Bool("discovery-insecure-skip-tls-verify", false, help("discovery-insecure-skip-tls-verify", "V3 discovery: skip server certificate verification"))
	f.String("discovery-cert", "", help("discovery-cert", "V3 discovery: identify secure client using this TLS certificate file"))
	f.String("discovery-key", "", help("discovery-key", "V3 discovery: identify secure client using this TLS key file"))
	f.String("discovery-cacert", "", help("discovery-cacert", "V3 discovery: verify certificates of TLS-enabled secure servers using this CA bundle"))
	f.String("discovery-user", "", help("discovery-user", "V3 discovery: username[:password] for authentication"))
	f.String("discovery-password", "", help("discovery-password", "V3 discovery: password for authentication"))
	f.String("discovery-fallback", "exit", help("discovery-fallback", "expected behavior ('exit') when discovery services fails"))
	f.String("discovery-srv", "", "DNS srv domain used to bootstrap the cluster (cairn has no DNS discovery: refused)")
	f.String("discovery-srv-name", "", help("discovery-srv-name", "suffix to the dns srv name queried when bootstrapping"))
	f.Bool("pre-vote", true, "enable the raft Pre-Vote algorithm to prevent disruption when a node that has been partitioned away rejoins the cluster")
	f.String("v2-deprecation", "write-only", "phase of v2store deprecation: write-only, write-only-skip-check, write-only-drop-data or gone (not-yet is refused, as by etcd 3.7); the default is enforced, ignoring user input, as in etcd")
	f.String("client-cert-file", "", help("client-cert-file", "path to an explicit client TLS cert file, otherwise --cert-file is used"))
	f.String("client-key-file", "", help("client-key-file", "path to an explicit client TLS key file, otherwise --key-file is used"))
	f.String("client-crl-file", "", "path to the client certificate revocation list file: a revoked client certificate is refused")
	f.String("client-cert-allowed-hostname", "", "comma-separated list of SAN hostnames for client cert authentication")
	f.String("peer-client-cert-file", "", "path to an explicit peer client TLS cert file (presented when dialling peers), otherwise --peer-cert-file is used")
	f.String("peer-client-key-file", "", "path to an explicit peer client TLS key file, otherwise --peer-key-file is used")
	f.String("peer-cert-allowed-cn", "", "comma-separated list of allowed CNs for inter-peer TLS authentication")
	f.String("peer-cert-allowed-hostname", "", "comma-separated list of allowed SAN hostnames for inter-peer TLS authentication")
	f.String("peer-crl-file", "", "path to the peer certificate revocation list file")
	f.Bool("peer-skip-client-san-verification", false, "skip verification of SAN field in client certificate for peer connections (by default a peer's certificate with IP or DNS SANs must name the address it connects from)")
	f.Uint("self-signed-cert-validity", 1, "the validity period in years of the client and peer certificates generated by --auto-tls and --peer-auto-tls")
	f.String("cors", "*", "comma-separated whitelist of origins for CORS, or cross-origin resource sharing (empty or * means allow all)")
	f.String("host-whitelist", "*", "acceptable hostnames from HTTP client requests, if server is not secure (empty or * means allow all)")
	f.Bool("enable-log-rotation", false, "enable log rotation of a single log-outputs file target")
	f.String("log-rotation-config-json", defaultLogRotation, "configures log rotation if enabled with a JSON logger config: maxsize (MB), maxage (days, 0 = no limit), maxbackups (0 = no limit), localtime, compress (gzip)")
	f.Duration("warning-unary-request-duration", memberconfig.DefaultWarningUnary, "time duration after which a warning is logged if a unary request takes more than this duration")
	f.Bool("enable-distributed-tracing", false, help("enable-distributed-tracing", "enable distributed tracing"))
	f.String("distributed-tracing-address", "localhost:4317", help("distributed-tracing-address", "distributed tracing collector address"))
	f.String("distributed-tracing-service-name", "etcd", help("distributed-tracing-service-name", "distributed tracing service name"))
	f.String("distributed-tracing-instance-id", "", help("distributed-tracing-instance-id", "distributed tracing instance ID"))
	f.Int("distributed-tracing-sampling-rate", 0, help("distributed-tracing-sampling-rate", "number of samples to collect per million spans for distributed tracing"))
	f.Int("compaction-batch-limit", 1000, "the maximum revisions deleted in each compaction batch")
	f.Duration("compaction-sleep-interval", 10*time.Millisecond, "the sleep interval between each compaction batch")
	f.Duration("watch-progress-notify-interval", memberconfig.DefaultProgressNotify, "duration of periodical watch progress notification")
	f.Duration("warning-apply-duration", memberconfig.DefaultWarningApply, "warning is generated if requests take more than this duration")
	f.Uint("bootstrap-defrag-threshold-megabytes", 0, "defragment the db at start if that frees at least this many megabytes (0: never)")
	f.Int("max-learners", memberconfig.DefaultMaxLearners, "the max number of learner members allowed in the cluster membership")
	f.Duration("downgrade-check-time", 5*time.Second, help("downgrade-check-time", "duration of time between two downgrade status checks"))
	f.Bool("unsafe-no-fsync", false, "disables fsync, unsafe, will cause data loss")
}

// etcdServeConfig fills the fields of the flags addEtcdServeFlags adds,
// after checking them as etcd does, and logs the flags that have no
// effect in cairn. fromFile says the values come from --config-file.
func etcdServeConfig(v *viper.Viper, cfg *memberconfig.Config, fromFile bool, logger *slog.Logger) error {
	if err := checkEtcdServeFlags(v, fromFile); err != nil {
		return err
	}
	cors, err := urlList("cors", v.GetString("cors"), true)
	if err != nil {
		return err
	}
	httpURLs, err := urlList("listen-client-http-urls", v.GetString("listen-client-http-urls"), false)
	if err != nil {
		return err
	}
	maxLearners := v.GetInt("max-learners")
	switch {
	case maxLearners < 0:
		return errors.New("membership: too many learner members in cluster")
	case maxLearners == 0:
		maxLearners = -1 // none (0 is the server's "default")
	}
	cfg.WALDir = v.GetString("wal-dir")
	cfg.ForceNewCluster = v.GetBool("force-new-cluster")
	cfg.NoInitialElectionTickAdvance = !v.GetBool("initial-election-tick-advance")
	cfg.ListenClientHTTPURLs = httpURLs
	cfg.MaxSnapshots = v.GetUint("max-snapshots")
	cfg.MaxWALs = v.GetUint("max-wals")
	cfg.BackendBatchInterval = v.GetDuration("backend-batch-interval")
	cfg.BackendBatchLimit = v.GetInt("backend-batch-limit")
	cfg.MemoryMlock = v.GetBool("memory-mlock")
	cfg.BackendFreelistType = v.GetString("backend-bbolt-freelist-type")
	cfg.MaxConcurrentStreams = v.GetUint32("max-concurrent-streams")
	cfg.GRPCKeepAliveMinTime = v.GetDuration("grpc-keepalive-min-time")
	cfg.GRPCKeepAliveInterval = v.GetDuration("grpc-keepalive-interval")
	cfg.GRPCKeepAliveTimeout = v.GetDuration("grpc-keepalive-timeout")
	cfg.Listen.ReusePort = v.GetBool("socket-reuse-port")
	cfg.Listen.ReuseAddress = v.GetBool("socket-reuse-address")
	cfg.NoGRPCGateway = !v.GetBool("enable-grpc-gateway")
	cfg.NoPreVote = !v.GetBool("pre-vote")
	cfg.ClientTLS.ClientCertFile = v.GetString("client-cert-file")
	cfg.ClientTLS.ClientKeyFile = v.GetString("client-key-file")
	cfg.ClientTLS.CRLFile = v.GetString("client-crl-file")
	cfg.ClientTLS.AllowedHostnames = splitList(v.GetString("client-cert-allowed-hostname"))
	cfg.PeerTLS.ClientCertFile = v.GetString("peer-client-cert-file")
	cfg.PeerTLS.ClientKeyFile = v.GetString("peer-client-key-file")
	cfg.PeerTLS.CRLFile = v.GetString("peer-crl-file")
	cfg.PeerTLS.AllowedCNs = splitList(v.GetString("peer-cert-allowed-cn"))
	cfg.PeerTLS.AllowedHostnames = splitList(v.GetString("peer-cert-allowed-hostname"))
	cfg.PeerTLS.VerifyClientSAN = !v.GetBool("peer-skip-client-san-verification")
	cfg.SelfSignedCertValidity = v.GetUint("self-signed-cert-validity")
	cfg.CORS = cors
	cfg.HostWhitelist = splitList(v.GetString("host-whitelist"))
	cfg.WarningUnaryRequestDuration = v.GetDuration("warning-unary-request-duration")
	cfg.CompactionBatchLimit = v.GetInt("compaction-batch-limit")
	cfg.CompactionSleepInterval = v.GetDuration("compaction-sleep-interval")
	cfg.WatchProgressNotifyInterval = v.GetDuration("watch-progress-notify-interval")
	cfg.WarningApplyDuration = v.GetDuration("warning-apply-duration")
	cfg.BootstrapDefragThresholdMegabytes = v.GetUint("bootstrap-defrag-threshold-megabytes")
	cfg.MaxLearners = maxLearners
	cfg.UnsafeNoFsync = v.GetBool("unsafe-no-fsync")
	if v.GetString("discovery-endpoints") != "" {
		cfg.InitialClusterToken = v.GetString("discovery-token") // as etcd's: the member and cluster IDs derive from it
		cfg.Discover = func(id uint64, self string) (string, error) {
			return discovery.Join(context.Background(), v.GetString, logger, id, self)
		}
	}
	if v.IsSet("max-snapshots") {
		logger.Warn("--max-snapshots is deprecated in 3.6 and will be decommissioned in 3.8.")
	}
	if v.IsSet("v2-deprecation") {
		logger.Warn("--v2-deprecation is deprecated and scheduled for removal in v3.8. The default value is enforced, ignoring user input.")
	}
	names := make([]string, 0, len(noEffect))
	for name := range noEffect {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if v.IsSet(name) {
			logger.Warn(fmt.Sprintf("--%s has no effect in cairn: %s", name, noEffect[name]), "value", v.GetString(name))
		}
	}
	if cfg.UnsafeNoFsync {
		logger.Warn("--unsafe-no-fsync: the WAL is never synced; a crash may lose acknowledged writes")
	}
	return nil
}

// checkEtcdServeFlags reports the values etcd refuses, with its messages.
func checkEtcdServeFlags(v *viper.Viper, fromFile bool) error {
	if lvl := v.GetString("v2-deprecation"); !slices.Contains(v2DeprecationLevels, lvl) {
		return fmt.Errorf("invalid value %q for flag -v2-deprecation: invalid value %q", lvl, lvl)
	}
	if !fromFile { // etcd checks it on its command line only
		switch fb := v.GetString("discovery-fallback"); fb {
		case "exit":
		case "proxy":
			return errors.New(`v2 proxy is deprecated, and --discovery-fallback can't be configured as "proxy"`)
		default:
			return fmt.Errorf("invalid value %q for flag -discovery-fallback: invalid value", fb)
		}
	}
	for _, name := range []string{"discovery", "discovery-proxy"} {
		if v.GetString(name) != "" {
			return fmt.Errorf("--%s: v2 discovery is not supported (etcd 3.7.3 does not define this flag either); bootstrap with --initial-cluster", name)
		}
	}
	bootstraps := 0
	for _, set := range []bool{v.IsSet("initial-cluster"), v.GetString("discovery-endpoints") != "", v.GetString("discovery-srv") != ""} {
		if set {
			bootstraps++
		}
	}
	if bootstraps > 1 {
		return errors.New(`multiple discovery or bootstrap flags are set. Choose one of "initial-cluster", "discovery-endpoints" or "discovery-srv"`)
	}
	if (v.GetString("discovery-token") == "") != (v.GetString("discovery-endpoints") == "") {
		return errors.New("both --discovery-token and --discovery-endpoints must be set")
	}
	if v.GetString("discovery-srv") != "" {
		return errors.New("cairn has no DNS discovery (--discovery-srv): bootstrap with --initial-cluster or --discovery-endpoints")
	}
	if v.GetBool("enable-distributed-tracing") && v.GetInt("distributed-tracing-sampling-rate") > 1000000 {
		return errors.New("distributed tracing configurition is not valid: (tracing sampling rate must be less than 1000000)")
	}
	return nil
}

// urlList parses a comma-separated list of URLs as etcd's URL flags do:
// the scheme is http, https, unix or unixs, and the host has a port. With
// star, "*" is allowed too (--cors).
func urlList(flag, s string, star bool) ([]string, error) {
	list := splitList(s)
	for _, u := range list {
		if star && u == "*" {
			continue
		}
		pu, err := url.Parse(u)
		if err != nil {
			return nil, fmt.Errorf("invalid value %q for flag -%s: %w", s, flag, err)
		}
		switch pu.Scheme {
		case "http", "https", "unix", "unixs":
		default:
			return nil, fmt.Errorf("invalid value %q for flag -%s: URL scheme must be http, https, unix, or unixs: %s", s, flag, u)
		}
		if !strings.Contains(pu.Host, ":") {
			return nil, fmt.Errorf("invalid value %q for flag -%s: URL address does not have the form \"host:port\": %s", s, flag, u)
		}
	}
	return list, nil
}

// defaultDataDir is the data dir of a member named name started without
// --data-dir: <name>.cairn, or <name>.etcd, an etcd member's default, if
// that exists and <name>.cairn does not.
func defaultDataDir(name string, logger *slog.Logger) string {
	dir, etcdDir := name+".cairn", name+".etcd"
	_, cairnErr := os.Stat(dir)
	_, etcdErr := os.Stat(etcdDir)
	if cairnErr == nil || etcdErr != nil {
		return dir
	}
	logger.Info("using the data directory of etcd's default name, as no cairn one exists", "data-dir", etcdDir, "not-found", dir)
	return etcdDir
}
