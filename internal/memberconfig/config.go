// Package memberconfig is a member's configuration: etcd's server flags as
// fields, their defaults, their validation, and where a member keeps its
// files. internal/cli/serve fills it from flags; internal/server runs it.
package memberconfig

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cairnkv/cairn/internal/autocompact"
	"github.com/cairnkv/cairn/internal/featuregate"
	"github.com/cairnkv/cairn/internal/listen"
	"github.com/cairnkv/cairn/internal/servertls"
	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/cluster"
	"github.com/cairnkv/cairn/pkg/store"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// Config is a member's configuration; the field names follow etcd's flags.
type Config struct {
	Name                     string
	DataDir                  string
	ListenClientURLs         []string
	AdvertiseClientURLs      []string
	ListenPeerURLs           []string
	InitialAdvertisePeerURLs []string
	InitialCluster           string // name=url,name=url
	InitialClusterState      string // new | existing
	InitialClusterToken      string
	// Discover, when set, is v3 discovery (--discovery-token and
	// --discovery-endpoints): at the first start of a member of a new
	// cluster, it is given the member's ID and its own name=url list, and
	// returns the initial cluster, which replaces InitialCluster.
	Discover                func(memberID uint64, self string) (string, error)
	SnapshotCount           uint64
	HeartbeatInterval       time.Duration
	ElectionTimeout         time.Duration
	QuotaBackendBytes       int64
	MaxRequestBytes         int
	MaxTxnOps               int
	AutoCompactionMode      string // periodic | revision
	AutoCompactionRetention string
	// SnapshotCatchUpEntries is how many entries a snapshot leaves in the
	// log for slow followers.
	SnapshotCatchUpEntries uint64
	// AuthToken is the token type and its options (etcd's --auth-token):
	// "simple" (the default) or "jwt,pub-key=...,priv-key=...,sign-method=...".
	AuthToken string
	// AuthTokenTTL is how long a simple auth token lives without use
	// (etcd's --auth-token-ttl); 0 means 300s. (auth: added)
	AuthTokenTTL time.Duration
	// BcryptCost is the bcrypt cost of new password hashes (etcd's
	// --bcrypt-cost); 0 or a value outside 4..31 means 10, as in etcd.
	BcryptCost int
	// ClientTLS and PeerTLS are the security flags of the client and peer
	// sides (--cert-file ..., --peer-cert-file ...); TLS the versions and
	// cipher suites both use.
	ClientTLS servertls.Files
	PeerTLS   servertls.Files
	TLS       servertls.Versions
	// EnablePprof serves Go's runtime profiles at /debug/pprof/ on the
	// client URLs (etcd's --enable-pprof).
	EnablePprof bool
	// NoStrictReconfigCheck is etcd's --strict-reconfig-check=false:
	// membership changes that leave too few started or connected members
	// for a quorum are accepted. (Removing the last voter never is.)
	NoStrictReconfigCheck bool
	// CorruptCheckTime is the time between the leader's corruption checks
	// (etcd's --corrupt-check-time); 0 turns them off.
	CorruptCheckTime time.Duration
	// CompactHashCheckTime is the time between the leader's checks of the
	// followers' compaction hashes (etcd's --compact-hash-check-time), with
	// the CompactHashCheck feature gate on; 0 means 1m.
	CompactHashCheckTime time.Duration
	// Features are the feature gates (--feature-gates).
	Features featuregate.Gates
	// WALDir is etcd's --wal-dir: the WAL's segments go there rather than
	// into <data-dir>/member/wal.
	WALDir string
	// ForceNewCluster (--force-new-cluster) restarts the member as the only
	// one of its cluster: the others are removed through its own log.
	ForceNewCluster bool
	// MaxSnapshots and MaxWALs are how many .snap and WAL files are kept
	// (--max-snapshots, --max-wals); 0 keeps them all.
	MaxSnapshots uint
	MaxWALs      uint
	// MaxLearners is how many learners the cluster may have (--max-learners).
	MaxLearners int
	// UnsafeNoFsync (--unsafe-no-fsync) never fsyncs the WAL.
	UnsafeNoFsync bool
	// NoPreVote is --pre-vote=false.
	NoPreVote bool
	// NoInitialElectionTickAdvance is --initial-election-tick-advance=false:
	// a member alone in its cluster waits an election timeout before it
	// campaigns, rather than campaigning as soon as its log is applied.
	NoInitialElectionTickAdvance bool
	// WarningApplyDuration is how long an apply may take before it is
	// logged (--warning-apply-duration); 0 means 100ms.
	WarningApplyDuration time.Duration
	// Backend and compaction tuning (--backend-batch-interval,
	// --backend-batch-limit, --compaction-batch-limit,
	// --compaction-sleep-interval; 0 means pkg/store's defaults, etcd's),
	// --memory-mlock and --backend-bbolt-freelist-type.
	MemoryMlock             bool
	BackendFreelistType     string
	BackendBatchInterval    time.Duration
	BackendBatchLimit       int
	CompactionBatchLimit    int
	CompactionSleepInterval time.Duration
	// BootstrapDefragThresholdMegabytes (--bootstrap-defrag-threshold-megabytes):
	// at start, the db is defragmented if that frees at least this much.
	BootstrapDefragThresholdMegabytes uint
	// SelfSignedCertValidity is the validity in years of the certificates
	// --auto-tls and --peer-auto-tls generate; 0 means 1.
	SelfSignedCertValidity uint
	// The client API's settings (internal/api): --max-concurrent-streams,
	// --grpc-keepalive-*, --watch-progress-notify-interval, --cors,
	// --host-whitelist, --listen-client-http-urls, --enable-grpc-gateway,
	// --warning-unary-request-duration, --socket-reuse-*.
	MaxConcurrentStreams        uint32
	GRPCKeepAliveMinTime        time.Duration
	GRPCKeepAliveInterval       time.Duration
	GRPCKeepAliveTimeout        time.Duration
	WatchProgressNotifyInterval time.Duration
	CORS                        []string
	HostWhitelist               []string
	ListenClientHTTPURLs        []string
	NoGRPCGateway               bool
	WarningUnaryRequestDuration time.Duration
	Listen                      listen.Options
	Logger                      *slog.Logger

	// Metrics is etcd's --metrics: "basic" (also when empty) or
	// "extensive", which adds the gRPC handling-time histograms.
	// ListenMetricsURLs (--listen-metrics-urls) are more URLs that serve
	// /metrics and /health only.
	Metrics           string
	ListenMetricsURLs []string
}

// Defaults of etcd.
const (
	DefaultName              = "default"
	DefaultSnapshotCount     = 10000
	DefaultHeartbeat         = 100 * time.Millisecond
	DefaultElectionTimeout   = 1000 * time.Millisecond
	DefaultQuotaBackendBytes = 2 << 30
	DefaultMaxRequestBytes   = 1536 * 1024
	DefaultMaxTxnOps         = 128
	DefaultCatchUpEntries    = 5000
	DefaultAuthToken         = "simple"
	MaxQuotaBackendBytes     = 8 << 30
	DefaultMaxSnapshots      = 5
	DefaultMaxWALs           = 5
	DefaultMaxLearners       = 1
	DefaultWarningApply      = 100 * time.Millisecond
	DefaultWarningUnary      = 300 * time.Millisecond
	DefaultKeepAliveMinTime  = 5 * time.Second
	DefaultKeepAliveInterval = 2 * time.Hour
	DefaultKeepAliveTimeout  = 20 * time.Second
	DefaultProgressNotify    = 10 * time.Minute
)

// WithDefaults fills unset fields with etcd's defaults.
func (c Config) WithDefaults() Config {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.DataDir == "" {
		c.DataDir = c.Name + ".cairn"
	}
	if len(c.ListenClientURLs) == 0 {
		c.ListenClientURLs = []string{"http://127.0.0.1:2379"}
	}
	if len(c.AdvertiseClientURLs) == 0 {
		c.AdvertiseClientURLs = c.ListenClientURLs
	}
	if len(c.ListenPeerURLs) == 0 {
		c.ListenPeerURLs = []string{"http://127.0.0.1:2380"}
	}
	if len(c.InitialAdvertisePeerURLs) == 0 {
		c.InitialAdvertisePeerURLs = c.ListenPeerURLs
	}
	if c.InitialCluster == "" {
		var parts []string
		for _, u := range c.InitialAdvertisePeerURLs {
			parts = append(parts, c.Name+"="+u)
		}
		c.InitialCluster = strings.Join(parts, ",")
	}
	if c.InitialClusterState == "" {
		c.InitialClusterState = "new"
	}
	if c.InitialClusterToken == "" {
		c.InitialClusterToken = "etcd-cluster"
	}
	if c.SnapshotCount == 0 {
		c.SnapshotCount = DefaultSnapshotCount
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeat
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = DefaultElectionTimeout
	}
	if c.QuotaBackendBytes == 0 {
		c.QuotaBackendBytes = DefaultQuotaBackendBytes
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxTxnOps == 0 {
		c.MaxTxnOps = DefaultMaxTxnOps
	}
	if c.SnapshotCatchUpEntries == 0 {
		c.SnapshotCatchUpEntries = DefaultCatchUpEntries
	}
	c.ClientTLS.Prefix, c.PeerTLS.Prefix = "", "peer-"
	if c.TLS.Min == "" {
		c.TLS.Min = servertls.DefaultMinVersion
	}
	if c.AuthToken == "" {
		c.AuthToken = DefaultAuthToken
	}
	if c.WarningApplyDuration == 0 {
		c.WarningApplyDuration = DefaultWarningApply
	}
	if c.WarningUnaryRequestDuration == 0 {
		c.WarningUnaryRequestDuration = DefaultWarningUnary
	}
	if c.MaxConcurrentStreams == 0 {
		c.MaxConcurrentStreams = math.MaxUint32
	}
	if c.GRPCKeepAliveMinTime == 0 {
		c.GRPCKeepAliveMinTime = DefaultKeepAliveMinTime
	}
	if c.WatchProgressNotifyInterval <= 0 {
		c.WatchProgressNotifyInterval = DefaultProgressNotify
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first problem with a configuration.
func (c Config) Validate() error {
	for _, group := range []struct {
		flag string
		urls []string
	}{
		{"--listen-client-urls", c.ListenClientURLs}, {"--advertise-client-urls", c.AdvertiseClientURLs},
		{"--listen-peer-urls", c.ListenPeerURLs}, {"--initial-advertise-peer-urls", c.InitialAdvertisePeerURLs},
	} {
		for _, u := range group.urls {
			if err := cluster.CheckURL(u); err != nil {
				return fmt.Errorf("%s: %w", group.flag, err)
			}
		}
	}
	if err := c.validateTLS(); err != nil {
		return err
	}
	if c.Metrics != "" && c.Metrics != "basic" && c.Metrics != "extensive" {
		return fmt.Errorf("--metrics: %q is neither basic nor extensive", c.Metrics)
	}
	for _, u := range c.ListenMetricsURLs {
		if err := cluster.CheckURL(u); err != nil {
			return fmt.Errorf("--listen-metrics-urls: %w", err)
		}
		if strings.HasPrefix(u, "https://") && !c.ClientTLS.AutoTLS && (c.ClientTLS.CertFile == "" || c.ClientTLS.KeyFile == "") {
			return ErrMissingClientTLSForMetrics
		}
	}
	if c.InitialClusterState != "new" && c.InitialClusterState != "existing" {
		return fmt.Errorf("--initial-cluster-state: %q is neither new nor existing", c.InitialClusterState)
	}
	if c.HeartbeatInterval <= 0 || c.ElectionTimeout < 5*c.HeartbeatInterval {
		return fmt.Errorf("--election-timeout (%v) must be at least 5 times --heartbeat-interval (%v)", c.ElectionTimeout, c.HeartbeatInterval)
	}
	if _, err := autocompact.Parse(c.AutoCompactionMode, c.AutoCompactionRetention); err != nil {
		return err
	}
	for _, u := range c.ListenClientHTTPURLs {
		if err := cluster.CheckURL(u); err != nil {
			return fmt.Errorf("--listen-client-http-urls: %w", err)
		}
		if slices.Contains(c.ListenClientURLs, u) {
			return fmt.Errorf("cannot bind both --listen-client-urls and --listen-client-http-urls on the same url %s", u)
		}
	}
	peers, err := cluster.ParseInitial(c.InitialCluster)
	if err != nil {
		return err
	}
	mine, ok := peers[c.Name]
	if !ok {
		return fmt.Errorf("--initial-cluster %q has no member named %q (--name)", c.InitialCluster, c.Name)
	}
	if !cluster.SameURLs(mine, c.InitialAdvertisePeerURLs) {
		return fmt.Errorf("--initial-cluster gives %s the peer URLs %v, but --initial-advertise-peer-urls is %v", c.Name, mine, c.InitialAdvertisePeerURLs)
	}
	return nil
}

func (c Config) MemberDir() string { return filepath.Join(c.DataDir, "member") }

// WALPath is --wal-dir, or <data-dir>/member/wal without it.
func (c Config) WALPath() string {
	if c.WALDir != "" {
		return c.WALDir
	}
	return filepath.Join(c.MemberDir(), "wal")
}

func (c Config) SnapDir() string { return filepath.Join(c.MemberDir(), "snap") }
func (c Config) DBPath() string  { return filepath.Join(c.SnapDir(), "db") }

// StoreConfig is the configuration of the store in the db file at path.
func (c Config) StoreConfig(path string) store.Config {
	return store.Config{
		Backend: backend.Config{Path: path, BatchInterval: c.BackendBatchInterval, BatchLimit: c.BackendBatchLimit,
			Mlock: c.MemoryMlock, FreelistType: c.BackendFreelistType},
		CompactionBatchLimit: c.CompactionBatchLimit,
		CompactionPause:      c.CompactionSleepInterval,
		Logger:               c.Logger,
	}
}

// WALOptions are the options of the WAL writer: --unsafe-no-fsync never
// syncs.
func (c Config) WALOptions() walfmt.Options {
	if c.UnsafeNoFsync {
		return walfmt.Options{Sync: walfmt.SyncNever}
	}
	return walfmt.Options{}
}

// LearnerLimit is --max-learners: MaxLearners, where 0 means etcd's
// default (1) and a negative value none (the serve command's
// --max-learners=0).
func (c Config) LearnerLimit() int {
	switch {
	case c.MaxLearners == 0:
		return DefaultMaxLearners
	case c.MaxLearners < 0:
		return 0
	}
	return c.MaxLearners
}

// PeerLocalIP is the address connections to peers start from: with the
// SetMemberLocalAddr gate, the IP of the first advertised peer URL when
// it is an IP and not 0.0.0.0 or ::, as in etcd; otherwise nil (the
// system chooses).
func (c Config) PeerLocalIP() net.IP {
	if !c.Features.Enabled(featuregate.SetMemberLocalAddr) || len(c.InitialAdvertisePeerURLs) == 0 {
		return nil
	}
	u, err := url.Parse(c.InitialAdvertisePeerURLs[0])
	if err != nil || listen.Unix(u.Scheme) {
		return nil
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && !ip.IsUnspecified() {
		return ip
	}
	return nil
}

// validateTLS checks the security flags against the URLs: an https
// listener needs a certificate or --auto-tls (etcd's wording).
func (c Config) validateTLS() error {
	if err := c.TLS.Validate(); err != nil {
		return err
	}
	for _, side := range []struct {
		name  string
		files servertls.Files
		urls  []string
	}{{"client", c.ClientTLS, c.ListenClientURLs}, {"peer", c.PeerTLS, c.ListenPeerURLs}} {
		if err := side.files.Check(); err != nil {
			return err
		}
		for _, u := range side.urls {
			if IsHTTPS(u) && !side.files.HasCert() && !side.files.AutoTLS {
				return fmt.Errorf("TLS key/cert (--%scert-file, --%skey-file) must be provided for %s url %s with HTTPS scheme",
					side.files.Prefix, side.files.Prefix, side.name, u)
			}
		}
	}
	return nil
}

// IsHTTPS reports whether u is a URL of a TLS listener.
func IsHTTPS(u string) bool {
	pu, err := url.Parse(u)
	return err == nil && listen.Secure(pu.Scheme)
}

// ErrMissingClientTLSForMetrics refuses an https --listen-metrics-urls
// without a client certificate (etcd's wording).
var ErrMissingClientTLSForMetrics = errors.New("client TLS key/cert (--cert-file, --key-file) must be provided for metrics secure url")
