// Package api serves the etcd v3 gRPC services (KV, Watch, Lease, Cluster,
// Maintenance, Auth) of one member on its client URLs, and /health, /livez,
// /readyz and /metrics over HTTP on the same ports.
package api

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/keepalive"

	"github.com/cairnkv/cairn/internal/api/electionpb"
	"github.com/cairnkv/cairn/internal/api/lockpb"
	"github.com/cairnkv/cairn/internal/listen"
	"github.com/cairnkv/cairn/internal/metrics"
	"github.com/cairnkv/cairn/internal/server"
	"github.com/cairnkv/cairn/internal/servertls"
)

// API is the client-facing side of a member.
type API struct {
	s    *server.Server
	log  *slog.Logger
	grpc *grpc.Server
	http *http.Server
	// grpcTLS serves gRPC alone on the https client URLs when
	// --listen-client-http-urls takes the HTTP services.
	grpcTLS *http.Server
	lns     []net.Listener
	wg      sync.WaitGroup
	gw      gateway
	// local is where the gateway's in-process connections reach the
	// gRPC server.
	local *listen.ChanListener
	// certUsers is --client-cert-auth: a client certificate's common name
	// names the caller's user (certuser.go).
	certUsers bool
	metrics   *metrics.Member
	// metricsHandler serves /metrics, on the client URLs and on the
	// --listen-metrics-urls (metricsSrv).
	metricsHandler http.Handler
	metricsSrv     []*http.Server
	// metricsTLS is a copy of the client TLS configuration made before
	// any server uses (and so changes) it, for the https metrics URLs.
	metricsTLS *tls.Config
	// defragging is set while a defragmentation runs (maintenance.go).
	defragging atomic.Bool
	// health is the gRPC health service (grpchealth.go).
	health *health.Server
	// stopping is cancelled by endStreams when Stop begins (stop.go).
	stopping   context.Context
	endStreams context.CancelFunc
}

// streamWorkers is how many goroutines gRPC keeps to run the handlers of
// new streams; a stream that finds them all busy gets a goroutine of its
// own, as every stream does without them. A new goroutine starts on a small
// stack, and a put's handler grows it twice or three times on its way
// through the interceptors and raft: 7% of a member's CPU under a load of
// small puts, which the kept goroutines, their stacks grown, do not pay.
// 256 covers the requests a busy member has in flight (watch and other
// long-lived streams keep theirs for their lifetime).
const streamWorkers = 256

// New builds the services of member s.
func New(s *server.Server, log *slog.Logger) *API {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := s.Config()
	a := &API{s: s, log: log, certUsers: cfg.ClientTLS.ClientCertAuth, metrics: s.Metrics()}
	a.stopping, a.endStreams = context.WithCancel(context.Background())
	a.grpc = grpc.NewServer(
		grpc.NumStreamWorkers(streamWorkers),
		grpc.MaxRecvMsgSize(cfg.MaxRequestBytes+512*1024),
		grpc.MaxSendMsgSize(1<<31-1),
		grpc.ForceServerCodecV2(newCodec()), // ranges answered in their wire form (encoded.go)
		grpc.MaxConcurrentStreams(cfg.MaxConcurrentStreams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: cfg.GRPCKeepAliveMinTime, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: keepAliveInterval(cfg.GRPCKeepAliveInterval), Timeout: cfg.GRPCKeepAliveTimeout}),
		// metrics first, so that every RPC is counted, refused ones too
		grpc.ChainUnaryInterceptor(a.metrics.GRPC.Unary, a.unary),
		grpc.ChainStreamInterceptor(a.metrics.GRPC.Stream, a.streamUntilStop, a.streamWaitReady, a.streamRequireLeader, a.streamAuth),
	)
	kv := &kvServer{a: a}
	registerService(a.grpc, kvServiceDesc(kv), kv)
	registerService(a.grpc, &pb.Watch_ServiceDesc, &watchServer{a: a})
	registerService(a.grpc, &pb.Lease_ServiceDesc, &leaseServer{a: a})
	registerService(a.grpc, &pb.Cluster_ServiceDesc, &clusterServer{a: a})
	registerService(a.grpc, &pb.Maintenance_ServiceDesc, &maintenanceServer{a: a})
	registerService(a.grpc, &pb.Auth_ServiceDesc, &authServer{a: a}) // auth: added
	// and etcd's Election and Lock (recipes.go)
	registerService(a.grpc, &electionpb.Election_ServiceDesc, &electionServer{r: newRecipes(a)})
	registerService(a.grpc, &lockpb.Lock_ServiceDesc, &lockServer{r: newRecipes(a)})
	a.newHealth()
	a.metrics.GRPC.Init(a.grpc)
	reg := newMetrics(a)
	a.metricsHandler = promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	a.http = &http.Server{
		Handler:           a.filterHTTP(a.httpHandler()),
		ReadHeaderTimeout: 5 * time.Second,
		TLSConfig:         offeringH2(s.ClientTLS()),
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: int(min(cfg.MaxConcurrentStreams, 1<<31-1))},
		ErrorLog:          servertls.ErrorLog(log, "client"), // refused TLS handshakes, among others
	}
	a.grpcTLS = &http.Server{Handler: a.grpc, ReadHeaderTimeout: a.http.ReadHeaderTimeout, TLSConfig: a.http.TLSConfig,
		HTTP2: a.http.HTTP2, ErrorLog: a.http.ErrorLog}
	a.local = listen.NewChanListener(localAddr{})
	a.metricsTLS = s.ClientTLS().Clone()
	return a
}

// unary is the member's unary interceptor, inside the metrics': it warns of
// a slow request (httpfilter.go), and before the handler waits until the
// member is ready (ready.go), refuses a request that requires a leader
// when there is none (leader.go), refuses a KV request of an invalid shape
// (kv.go) and applies auth (auth.go). One interceptor rather than a chain
// of five: gRPC makes a closure per link of a chain, per request.
func (a *API) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	defer a.warnIfSlow(ctx, info.FullMethod, time.Now())
	if err := a.waitReady(ctx); err != nil {
		return nil, err
	}
	if err := a.checkLeader(ctx); err != nil {
		return nil, err
	}
	if err := a.checkShape(req); err != nil {
		return nil, toGRPC(err)
	}
	ctx, err := a.guard(ctx, info.FullMethod, req)
	if err != nil {
		return nil, toGRPC(err)
	}
	return handler(ctx, req)
}

// Serve listens on every client URL; gRPC (HTTP/2) and HTTP/1 share a port.
// On an http URL the first bytes of a connection tell gRPC from HTTP/1; on
// an https URL one HTTP server takes both and hands gRPC requests to the
// gRPC server (see httpHandler), as etcd does.
func (a *API) Serve(clientURLs []string) error {
	a.wg.Add(1)
	go func() { defer a.wg.Done(); a.grpc.Serve(a.local) }()
	if !a.s.Config().NoGRPCGateway {
		if err := a.gw.start(a.dialLocal); err != nil {
			return fmt.Errorf("start the JSON gateway: %w", err)
		}
	}
	// With --listen-client-http-urls, those take the HTTP services and the
	// client URLs serve gRPC alone.
	httpURLs := a.s.Config().ListenClientHTTPURLs
	listeners, err := a.listenClientURLs(append(append([]string(nil), clientURLs...), httpURLs...))
	if err != nil {
		return err
	}
	for _, l := range listeners {
		u, ln, secure := l.url, l.ln, l.secure
		grpcOnly := len(httpURLs) > 0 && !slices.Contains(httpURLs, u)
		switch {
		case secure && grpcOnly:
			a.wg.Add(1)
			go func() { defer a.wg.Done(); a.grpcTLS.ServeTLS(ln, "", "") }()
		case secure:
			a.wg.Add(1)
			go func() { defer a.wg.Done(); a.http.ServeTLS(ln, "", "") }()
		case grpcOnly:
			a.wg.Add(1)
			go func() { defer a.wg.Done(); a.grpc.Serve(ln) }()
		case len(httpURLs) > 0:
			a.wg.Add(1)
			go func() { defer a.wg.Done(); a.http.Serve(ln) }()
		default:
			grpcL, httpL := listen.SplitHTTP2(ln)
			a.wg.Add(2)
			go func() { defer a.wg.Done(); a.grpc.Serve(grpcL) }()
			go func() { defer a.wg.Done(); a.http.Serve(httpL) }()
		}
	}
	return a.serveMetricsURLs()
}

// offeringH2 is cfg with HTTP/2 among its application protocols. The one
// http.Server serves both the https URLs (ServeTLS) and the http ones
// (Serve); whichever starts first sets up its HTTP/2 for both, and Serve
// sets up none for a TLS configuration that does not offer h2: gRPC over
// TLS would then fail on the ALPN.
func offeringH2(cfg *tls.Config) *tls.Config {
	if cfg == nil || slices.Contains(cfg.NextProtos, "h2") {
		return cfg
	}
	cfg = cfg.Clone()
	cfg.NextProtos = append([]string{"h2"}, cfg.NextProtos...)
	return cfg
}

// clientListener is the listener of one client URL.
type clientListener struct {
	url    string
	ln     net.Listener
	secure bool
}

// listenClientURLs opens the listeners of the client URLs. An http and an
// https URL of the same host and port share one port, as etcd's do: a
// connection that opens with a TLS record goes to the https one.
func (a *API) listenClientURLs(urls []string) ([]clientListener, error) {
	plainAt := map[string]string{} // host:port -> its http URL, when it also has an https one
	for _, u := range urls {
		if p, err := url.Parse(u); err == nil && p.Scheme == "https" && slices.Contains(urls, "http://"+p.Host) {
			plainAt[p.Host] = "http://" + p.Host
		}
	}
	var out []clientListener
	for _, u := range urls {
		p, _ := url.Parse(u)
		if p != nil && plainAt[p.Host] == u {
			continue // listened on with its https URL
		}
		ln, secure, err := a.listen("client", u)
		if err != nil {
			return nil, err
		}
		if plain, ok := plainAt[p.Host]; ok && secure {
			tlsL, plainL := listen.SplitConns(ln, 1, func(head []byte) bool { return head[0] == tlsHandshakeRecord })
			out = append(out, clientListener{u, tlsL, true}, clientListener{plain, plainL, false})
			continue
		}
		out = append(out, clientListener{u, ln, secure})
	}
	return out, nil
}

// tlsHandshakeRecord is the first byte of every TLS connection (a
// handshake record: the ClientHello).
const tlsHandshakeRecord = 0x16

// listen opens the listener of a client or metrics URL (what) and keeps
// it to close at Stop; an https URL needs the member's TLS configuration.
func (a *API) listen(what, u string) (ln net.Listener, secure bool, err error) {
	ln, secure, err = a.s.Config().Listen.URL(u)
	if err != nil {
		return nil, false, fmt.Errorf("listen on %s URL %s: %w", what, u, err)
	}
	if secure && a.s.ClientTLS() == nil {
		ln.Close()
		return nil, false, fmt.Errorf("%s URL %s: the member has no TLS configuration", what, u)
	}
	a.lns = append(a.lns, ln)
	return ln, secure, nil
}

// dialLocal opens an in-process connection to the gRPC server.
func (a *API) dialLocal(ctx context.Context, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	if err := a.local.Deliver(ctx, server); err != nil {
		return nil, err
	}
	return client, nil
}

// localAddr is the address of the in-process listener.
type localAddr struct{}

func (localAddr) Network() string { return "pipe" }
func (localAddr) String() string  { return "in-process" }

// header is the response header of this member at revision rev.
func (a *API) header(rev int64) *pb.ResponseHeader {
	if rev == 0 {
		rev = a.s.Store().Rev()
	}
	return &pb.ResponseHeader{ClusterId: a.s.ClusterID(), MemberId: a.s.ID(), Revision: rev, RaftTerm: a.s.Term()}
}

// fillHeader completes a header the store or apply loop started.
func (a *API) fillHeader(h **pb.ResponseHeader) {
	rev := int64(0)
	if *h != nil {
		rev = (*h).Revision
	}
	*h = a.header(rev)
}
