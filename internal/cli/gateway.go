package cli

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/etcdlog"
	"github.com/cairnkv/cairn/internal/tcpproxy"
)

// newGatewayCommand is `gateway start`, etcd's L4 gateway: a local TCP
// port that pipes every connection to one of the cluster's client
// endpoints (internal/tcpproxy), with etcd's flags.
func newGatewayCommand() *cobra.Command {
	gateway := &cobra.Command{Use: "gateway", Short: "gateway related command",
		Example: "  cairn gateway start --endpoints=10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379"}
	var (
		listenAddr string
		endpoints  []string
		retryDelay time.Duration
		srv        string
	)
	start := &cobra.Command{
		Use:   "start",
		Short: "start the gateway",
		Example: `  # clients of 127.0.0.1:23790 reach the three members, in turn
  cairn gateway start --endpoints=10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379
  # leave a member that refused a connection out for 10 s only
  cairn gateway start --listen-addr=127.0.0.1:2379 --endpoints=http://10.0.0.1:2379 --retry-delay=10s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if srv != "" {
				return fmt.Errorf("--discovery-srv: cairn's gateway does not look up DNS SRV records; give the members' client URLs with --endpoints")
			}
			if _, _, err := net.SplitHostPort(listenAddr); err != nil {
				return fmt.Errorf("failed to validate listen address: %s", listenAddr)
			}
			var eps []string
			for _, ep := range endpoints {
				if _, hostPort, ok := strings.Cut(ep, "://"); ok {
					ep = hostPort // the scheme goes, as from etcd's gateway
				}
				if ep == listenAddr {
					return fmt.Errorf("SRV or endpoint (%s->%s) should not resolve to the gateway listen addr (%s)", ep, ep, listenAddr)
				}
				if ep != "" {
					eps = append(eps, ep)
				}
			}
			if len(eps) == 0 {
				return fmt.Errorf("no endpoints found")
			}
			l, err := net.Listen("tcp", listenAddr)
			if err != nil {
				return err
			}
			log := slog.New(etcdlog.NewHandler(cmd.ErrOrStderr(), etcdlog.JSON, slog.LevelInfo))
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			p := &tcpproxy.Proxy{Endpoints: eps, RetryDelay: retryDelay, Log: log}
			return p.Serve(ctx, l)
		},
	}
	f := start.Flags()
	f.StringVar(&listenAddr, "listen-addr", "127.0.0.1:23790", "listen address")
	f.StringSliceVar(&endpoints, "endpoints", []string{"127.0.0.1:2379"}, "comma separated etcd cluster endpoints")
	f.DurationVar(&retryDelay, "retry-delay", time.Minute, "duration of delay before retrying failed endpoints")
	f.StringVar(&srv, "discovery-srv", "", "DNS domain used to bootstrap initial cluster (not supported by cairn: refused)")
	f.String("discovery-srv-name", "", "service name to query when using DNS discovery (with --discovery-srv only)")
	f.Bool("insecure-discovery", false, "accept insecure SRV records (with --discovery-srv only)")
	f.String("trusted-ca-file", "", "path to the client server TLS CA file for verifying the discovered endpoints when discovery-srv is provided")
	gateway.AddCommand(start)
	return gateway
}
