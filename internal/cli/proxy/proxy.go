// Package proxy is the `grpc-proxy` command: etcd's flags of `etcd
// grpc-proxy start`, their checks, and the proxy (internal/grpcproxy) they
// start.
package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/etcdlog"
	"github.com/cairnkv/cairn/internal/grpcproxy"
	"github.com/cairnkv/cairn/internal/servertls"
)

// grpcProxyFlags are the flags of `grpc-proxy start`, etcd's.
type grpcProxyFlags struct {
	listenAddr, advertiseClientURL, metricsAddr, dataDir string
	endpoints                                            []string
	autoSyncInterval                                     time.Duration
	namespace                                            string

	// to the cluster
	cert, key, cacert      string
	insecureSkipTLSVerify  bool
	dialKeepAliveTime      time.Duration
	dialKeepAliveTimeout   time.Duration
	permitWithoutStream    bool
	discoverySRV, srvName  string
	insecureDiscovery      bool
	resolverPrefix         string
	resolverTTL            int
	leasingPrefix          string
	serializableOrdering   bool
	grpcLogging            bool
	maxRecvBytes           int
	maxSendBytes           int
	maxConcurrentStreams   uint32
	keepAliveInterval      time.Duration
	keepAliveTimeout       time.Duration
	keepAliveMinTime       time.Duration
	enablePprof, debug     bool
	selfSignedCertValidity uint

	// to the clients
	certFile, keyFile, trustedCAFile, crlFile string
	autoTLS                                   bool
	tlsMinVersion, tlsMaxVersion              string
	cipherSuites                              []string
}

// Command is `grpc-proxy start`, etcd's gRPC proxy
// (internal/grpcproxy), with etcd's flags, defaults and messages.
func Command() *cobra.Command {
	proxy := &cobra.Command{Use: "grpc-proxy", Short: "grpc-proxy related command",
		Example: "  cairn grpc-proxy start --endpoints=10.0.0.1:2379,10.0.0.2:2379 --listen-addr=127.0.0.1:23790"}
	var fl grpcProxyFlags
	start := &cobra.Command{
		Use:   "start",
		Short: "start the grpc proxy",
		Example: `  # clients of 127.0.0.1:23790 reach the cluster, whose member list is followed every 30 s
  cairn grpc-proxy start --endpoints=10.0.0.1:2379 --endpoints-auto-sync-interval=30s
  # a tenant that sees only the keys under /tenant-a/
  cairn grpc-proxy start --endpoints=10.0.0.1:2379 --listen-addr=127.0.0.1:23791 --namespace=/tenant-a/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runGRPCProxy(ctx, cmd, &fl)
		},
	}
	f := start.Flags()
	f.StringVar(&fl.listenAddr, "listen-addr", "127.0.0.1:23790", "listen address")
	f.StringVar(&fl.discoverySRV, "discovery-srv", "", "domain name to query for SRV records describing cluster endpoints (not supported by cairn: refused)")
	f.StringVar(&fl.srvName, "discovery-srv-name", "", "service name to query when using DNS discovery")
	f.StringSliceVar(&fl.endpoints, "endpoints", []string{"127.0.0.1:2379"}, "comma separated etcd cluster endpoints")
	f.DurationVar(&fl.autoSyncInterval, "endpoints-auto-sync-interval", 0, "etcd endpoints auto sync interval (disabled by default)")
	f.StringVar(&fl.advertiseClientURL, "advertise-client-url", "127.0.0.1:23790", "advertise address to register (must be reachable by client)")
	f.StringVar(&fl.resolverPrefix, "resolver-prefix", "", "prefix to use for registering proxy (must be shared with other grpc-proxy members)")
	f.IntVar(&fl.resolverTTL, "resolver-ttl", 0, "specify TTL, in seconds, when registering proxy endpoints")
	f.StringVar(&fl.namespace, "namespace", "", "string to prefix to all keys for namespacing requests")
	f.BoolVar(&fl.enablePprof, "enable-pprof", false, `Enable runtime profiling data via HTTP server. Address is at client URL + "/debug/pprof/"`)
	f.StringVar(&fl.dataDir, "data-dir", "default.proxy", "Data directory for persistent data")
	f.IntVar(&fl.maxRecvBytes, "max-recv-bytes", math.MaxInt32, "message receive limits in bytes (default value is math.MaxInt32)")
	f.IntVar(&fl.maxSendBytes, "max-send-bytes", 1536*1024, "message send limits in bytes (default value is 1.5 MiB)")
	f.DurationVar(&fl.keepAliveMinTime, "grpc-keepalive-min-time", 5*time.Second, "Minimum interval duration that a client should wait before pinging proxy.")
	f.DurationVar(&fl.keepAliveInterval, "grpc-keepalive-interval", 2*time.Hour, "Frequency duration of server-to-client ping to check if a connection is alive (0 to disable).")
	f.DurationVar(&fl.keepAliveTimeout, "grpc-keepalive-timeout", 20*time.Second, "Additional duration of wait before closing a non-responsive connection (0 to disable).")
	f.DurationVar(&fl.dialKeepAliveTime, "dial-keepalive-time", 0, "keepalive time for client(grpc-proxy) connections (default 0, disable).")
	f.DurationVar(&fl.dialKeepAliveTimeout, "dial-keepalive-timeout", 20*time.Second, "keepalive timeout for client(grpc-proxy) connections (default 20s).")
	f.BoolVar(&fl.permitWithoutStream, "permit-without-stream", false, "Enable client(grpc-proxy) to send keepalive pings even with no active RPCs.")
	f.StringVar(&fl.metricsAddr, "metrics-addr", "", "listen for endpoint /metrics requests on an additional interface")

	// to the cluster
	f.BoolVar(&fl.insecureDiscovery, "insecure-discovery", false, "accept insecure SRV records")
	f.BoolVar(&fl.insecureSkipTLSVerify, "insecure-skip-tls-verify", false, "skip authentication of etcd server TLS certificates (CAUTION: this option should be enabled only for testing purposes)")
	f.StringVar(&fl.cert, "cert", "", "identify secure connections with etcd servers using this TLS certificate file")
	f.StringVar(&fl.key, "key", "", "identify secure connections with etcd servers using this TLS key file")
	f.StringVar(&fl.cacert, "cacert", "", "verify certificates of TLS-enabled secure etcd servers using this CA bundle")

	// to the clients
	f.StringVar(&fl.certFile, "cert-file", "", "identify secure connections to the proxy using this TLS certificate file")
	f.StringVar(&fl.keyFile, "key-file", "", "identify secure connections to the proxy using this TLS key file")
	f.StringVar(&fl.trustedCAFile, "trusted-ca-file", "", "verify certificates of TLS-enabled secure proxy using this CA bundle")
	f.StringVar(&fl.crlFile, "client-crl-file", "", "proxy client certificate revocation list file.")
	f.BoolVar(&fl.autoTLS, "auto-tls", false, "proxy TLS using generated certificates")
	f.UintVar(&fl.selfSignedCertValidity, "self-signed-cert-validity", 1, "The validity period of the proxy certificates, unit is year")
	f.StringSliceVar(&fl.cipherSuites, "listen-cipher-suites", nil, "Comma-separated list of supported TLS cipher suites between client/proxy (empty will be auto-populated by Go).")
	f.StringVar(&fl.tlsMinVersion, "tls-min-version", servertls.DefaultMinVersion, "Minimum TLS version supported by grpc proxy. Possible values: TLS1.2, TLS1.3.")
	f.StringVar(&fl.tlsMaxVersion, "tls-max-version", "", "Maximum TLS version supported by grpc proxy. Possible values: TLS1.2, TLS1.3 (empty defers to Go).")

	// experimental
	f.StringVar(&fl.leasingPrefix, "experimental-leasing-prefix", "", "leasing metadata prefix for disconnected linearized reads. (not supported by cairn: refused)")
	f.BoolVar(&fl.serializableOrdering, "experimental-serializable-ordering", false, "Ensure serializable reads have monotonically increasing store revisions across endpoints. (not supported by cairn: refused)")
	f.BoolVar(&fl.grpcLogging, "experimental-enable-grpc-logging", false, "logging all grpc requests and responses (not supported by cairn: refused)")
	f.Uint32Var(&fl.maxConcurrentStreams, "max-concurrent-streams", math.MaxUint32, "Maximum concurrent streams that each client can open at a time.")
	f.BoolVar(&fl.debug, "debug", false, "Enable debug-level logging for grpc-proxy.")
	proxy.AddCommand(start)
	return proxy
}

// refused says which flag asks for what cairn's proxy does
// not do, rather than ignore it.
func (fl *grpcProxyFlags) refused() error {
	switch {
	case fl.discoverySRV != "":
		return fmt.Errorf("--discovery-srv: cairn's gRPC proxy does not look up DNS SRV records; give the members' client URLs with --endpoints")
	case fl.leasingPrefix != "":
		return fmt.Errorf("--experimental-leasing-prefix: cairn's gRPC proxy has no leasing cache")
	case fl.serializableOrdering:
		return fmt.Errorf("--experimental-serializable-ordering is not supported by cairn's gRPC proxy")
	case fl.grpcLogging:
		return fmt.Errorf("--experimental-enable-grpc-logging is not supported by cairn's gRPC proxy")
	}
	return nil
}

// serverTLS is the TLS configuration of the proxy's listener, nil without
// a certificate; errors in etcd's words.
func (fl *grpcProxyFlags) serverTLS(log *slog.Logger) (*tls.Config, error) {
	versions := servertls.Versions{Min: fl.tlsMinVersion, Max: fl.tlsMaxVersion, CipherSuites: fl.cipherSuites}
	if err := (servertls.Versions{Min: fl.tlsMinVersion}).Validate(); err != nil {
		return nil, fmt.Errorf("tls-min-version is invalid: %w", err)
	}
	if err := (servertls.Versions{Max: fl.tlsMaxVersion}).Validate(); err != nil {
		return nil, fmt.Errorf("tls-max-version is invalid: %w", err)
	}
	if err := versions.Validate(); err != nil {
		return nil, err
	}
	files := servertls.Files{CertFile: fl.certFile, KeyFile: fl.keyFile, TrustedCAFile: fl.trustedCAFile, CRLFile: fl.crlFile, AutoTLS: fl.autoTLS}
	host, _, _ := net.SplitHostPort(fl.listenAddr)
	files, err := files.WithAutoTLS(filepath.Join(fl.dataDir, "fixtures", "proxy"), []string{host}, fl.selfSignedCertValidity, log)
	if err != nil {
		return nil, err
	}
	if files.CertFile == "" && files.KeyFile == "" {
		return nil, nil
	}
	if (files.CertFile == "") != (files.KeyFile == "") {
		return nil, fmt.Errorf("KeyFile and CertFile must both be present[key: %s, cert: %s]", files.KeyFile, files.CertFile)
	}
	log.Info("gRPC proxy server TLS", "cert-file", files.CertFile, "key-file", files.KeyFile, "trusted-ca-file", files.TrustedCAFile)
	return files.ServerConfig(versions)
}

// clusterClient is the proxy's client of the cluster.
func (fl *grpcProxyFlags) clusterClient(log *slog.Logger) (*client.Client, error) {
	var eps []string
	for _, ep := range fl.endpoints {
		if ep != "" {
			eps = append(eps, ep)
		}
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("etcdclient: no available endpoints")
	}
	cfg := client.Config{
		Endpoints:        eps,
		KeepAliveTime:    fl.dialKeepAliveTime,
		KeepAliveTimeout: fl.dialKeepAliveTimeout,
		Logger:           log,
	}
	files := client.TLSFiles{CAFile: fl.cacert, CertFile: fl.cert, KeyFile: fl.key, InsecureSkipVerify: fl.insecureSkipTLSVerify}
	if !files.Empty() {
		tlsCfg, err := files.Config()
		if err != nil {
			return nil, err
		}
		cfg.TLS = tlsCfg
	}
	return client.New(cfg)
}

func runGRPCProxy(ctx context.Context, cmd *cobra.Command, fl *grpcProxyFlags) error {
	if err := fl.refused(); err != nil {
		return err
	}
	var register *grpcproxy.Registration
	if fl.resolverPrefix != "" {
		if fl.resolverTTL < 1 {
			return fmt.Errorf("invalid resolver-ttl %d", fl.resolverTTL)
		}
		register = &grpcproxy.Registration{Prefix: fl.resolverPrefix, Addr: fl.advertiseClientURL, TTL: int64(fl.resolverTTL)}
	}
	level := slog.LevelInfo
	if fl.debug {
		level = slog.LevelDebug
	}
	log := slog.New(etcdlog.NewHandler(cmd.ErrOrStderr(), etcdlog.JSON, level))
	serverTLS, err := fl.serverTLS(log)
	if err != nil {
		return err
	}
	var metricsListener net.Listener
	var metricsTLS *tls.Config
	if fl.metricsAddr != "" {
		u, err := url.Parse(fl.metricsAddr)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return fmt.Errorf("invalid --metrics-addr %q: want a URL such as http://127.0.0.1:2381", fl.metricsAddr)
		}
		if u.Scheme == "https" {
			if serverTLS == nil {
				return fmt.Errorf("--metrics-addr %s: https needs the proxy's certificate (--cert-file and --key-file, or --auto-tls)", fl.metricsAddr)
			}
			metricsTLS = serverTLS
		}
		if metricsListener, err = net.Listen("tcp", u.Host); err != nil {
			return err
		}
		defer metricsListener.Close()
	}
	l, err := net.Listen("tcp", fl.listenAddr)
	if err != nil {
		return err
	}
	defer l.Close()
	log.Info("listening for gRPC proxy client requests", "address", fl.listenAddr)
	c, err := fl.clusterClient(log.With("logger", "client"))
	if err != nil {
		return err
	}
	defer c.Close()
	p := grpcproxy.New(grpcproxy.Config{
		Client:               c,
		Namespace:            fl.namespace,
		AutoSyncInterval:     fl.autoSyncInterval,
		TLS:                  serverTLS,
		MaxRecvBytes:         fl.maxRecvBytes,
		MaxSendBytes:         fl.maxSendBytes,
		MaxConcurrentStreams: fl.maxConcurrentStreams,
		KeepAliveInterval:    fl.keepAliveInterval,
		KeepAliveMinTime:     fl.keepAliveMinTime,
		KeepAliveTimeout:     fl.keepAliveTimeout,
		EnablePprof:          fl.enablePprof,
		Register:             register,
		Log:                  log,
	})
	if metricsListener != nil {
		go p.ServeMetrics(ctx, metricsListener, metricsTLS)
	}
	return p.Serve(ctx, l)
}
