// Package grpcproxy is the gRPC proxy behind `etcd grpc-proxy start`: a
// gRPC server with etcd's services (KV, Watch, Lease, Cluster, Maintenance,
// Auth, Election, Lock) that passes every call and stream to the cluster,
// through internal/client (a connection per member, calls moved to a live
// member when one is lost). Watchers of the same keys share one watch on
// the cluster (shared.go), and lease keep-alives one stream per token, a
// renewal of a lease in flight answering every client that asked
// (keepalive.go). The client's auth token goes along, so permissions stay
// the cluster's, and the cluster's errors come back unchanged. With a
// namespace (internal/grpcproxy/namespace) its clients see only the keys
// under a prefix. On the same port it serves /health, /proxy/health and
// /metrics over HTTP.
//
// It is a client of the cluster: it knows nothing of the server.
package grpcproxy

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/grpcproxy/namespace"
	"github.com/cairnkv/cairn/internal/listen"
)

// Config is what a proxy serves and how.
type Config struct {
	// Client is the cluster's client; the proxy does not close it.
	Client *client.Client
	// Namespace, when not empty, is the prefix of every key of the clients.
	Namespace string
	// AutoSyncInterval, when positive, is how often the endpoints follow
	// the cluster's member list.
	AutoSyncInterval time.Duration
	// TLS, when not nil, secures the listener (gRPC and HTTP).
	TLS *tls.Config
	// MaxRecvBytes and MaxSendBytes limit the messages of the clients.
	MaxRecvBytes, MaxSendBytes int
	// MaxConcurrentStreams limits the streams of one client connection.
	MaxConcurrentStreams uint32
	// KeepAliveInterval and KeepAliveTimeout: a connection silent for the
	// interval is pinged, and closed if the ping goes unanswered for the
	// timeout (0 disables either).
	KeepAliveInterval, KeepAliveTimeout time.Duration
	// KeepAliveMinTime is the shortest interval between a client's pings:
	// a client that pings more often is sent away.
	KeepAliveMinTime time.Duration
	// Register, when not nil, makes the proxy known under a prefix of the
	// cluster's keys, and its MemberList lists the proxies registered there.
	Register *Registration
	// EnablePprof serves Go's profiles under /debug/pprof/.
	EnablePprof bool
	Log         *slog.Logger
}

// Proxy is a running gRPC proxy.
type Proxy struct {
	cfg     Config
	client  *client.Client
	conn    grpc.ClientConnInterface
	ns      namespacer
	watches *sharedWatches
	// nowReads are the reads that create watchers.
	nowReads *nowReads
	// keepAlives coalesces the clients' lease keep-alives.
	keepAlives *keepAlives
	// cache answers serializable reads; its watch lives in ctx, which ends
	// with Serve.
	cache     *rangeCache
	ctx       context.Context
	stopCache context.CancelFunc
	grpc      *grpc.Server
	metrics   *metrics
	log       *slog.Logger
}

// New builds a proxy of cfg.Client.
func New(cfg Config) *Proxy {
	p := &Proxy{
		cfg:     cfg,
		client:  cfg.Client,
		conn:    cfg.Client.Conn(),
		ns:      namespacer{prefix: namespace.Prefix(cfg.Namespace)},
		metrics: newMetrics(),
		log:     cfg.Log,
	}
	p.watches = newSharedWatches(cfg.Client, p.metrics)
	p.nowReads = &nowReads{p: p, inFlight: map[nowReadKey]*nowRead{}}
	p.keepAlives = newKeepAlives(p.conn)
	p.cache = newRangeCache(p.metrics)
	p.ctx, p.stopCache = context.WithCancel(context.Background())
	p.grpc = grpc.NewServer(
		grpc.UnknownServiceHandler(p.handle),
		grpc.ForceServerCodec(codec{}),
		grpc.MaxRecvMsgSize(cfg.MaxRecvBytes),
		grpc.MaxSendMsgSize(cfg.MaxSendBytes),
		grpc.ChainStreamInterceptor(p.metrics.interceptor),
		grpc.MaxConcurrentStreams(cfg.MaxConcurrentStreams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: cfg.KeepAliveMinTime, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: orNever(cfg.KeepAliveInterval), Timeout: cfg.KeepAliveTimeout}),
	)
	return p
}

// orNever is d, or the longest duration for 0 (disabled).
func orNever(d time.Duration) time.Duration {
	if d == 0 {
		return math.MaxInt64
	}
	return d
}

// Handler serves the proxy's port: gRPC (HTTP/2 requests of type
// application/grpc) and the HTTP paths.
func (p *Proxy) Handler() http.Handler {
	mux := p.httpMux()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			p.grpc.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// Serve serves clients on l until ctx ends, and keeps the endpoints in
// step with the member list meanwhile. It closes l. In clear text, gRPC
// connections go to the gRPC server's own transport (much faster than
// through net/http) and the others to the HTTP paths; over TLS, both go
// through net/http, which answers the handshake.
func (p *Proxy) Serve(ctx context.Context, l net.Listener) error {
	srv := p.httpServer(p.Handler(), p.cfg.TLS)
	if p.cfg.AutoSyncInterval > 0 {
		go p.autoSync(ctx)
	}
	if r := p.cfg.Register; r != nil {
		registered := make(chan struct{})
		go func() {
			defer close(registered)
			p.register(ctx, *r)
		}()
		defer func() { <-registered }()
	}
	httpL := l
	if p.cfg.TLS == nil {
		var grpcL net.Listener
		grpcL, httpL = listen.SplitHTTP2(l)
		go p.grpc.Serve(grpcL)
	}
	stop := context.AfterFunc(ctx, func() {
		defer l.Close()
		p.stopCache()
		p.grpc.Stop() // ends the calls in flight, watches included
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(shutdown) != nil {
			srv.Close()
		}
	})
	defer stop()
	p.log.Info("started gRPC proxy", "address", l.Addr().String())
	var err error
	if p.cfg.TLS != nil {
		err = srv.ServeTLS(httpL, "", "")
	} else {
		err = srv.Serve(httpL)
	}
	if errors.Is(err, http.ErrServerClosed) || ctx.Err() != nil {
		return nil
	}
	return err
}

// ServeMetrics serves /metrics and /health on l (--metrics-addr) until
// ctx ends; tlsCfg, when not nil, secures it.
func (p *Proxy) ServeMetrics(ctx context.Context, l net.Listener, tlsCfg *tls.Config) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", p.metrics.handler())
	mux.HandleFunc("/health", p.serveHealth)
	srv := p.httpServer(mux, tlsCfg)
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	var err error
	if tlsCfg != nil {
		err = srv.ServeTLS(l, "", "")
	} else {
		err = srv.Serve(l)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// httpServer serves h over HTTP/1.1 and HTTP/2, the latter in clear text
// too (gRPC without TLS).
func (p *Proxy) httpServer(h http.Handler, tlsCfg *tls.Config) *http.Server {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		Protocols:         &protocols,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: int(min(p.cfg.MaxConcurrentStreams, 1<<31-1)),
			SendPingTimeout:      p.cfg.KeepAliveInterval,
			PingTimeout:          p.cfg.KeepAliveTimeout,
		},
		ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	if tlsCfg != nil {
		srv.TLSConfig = tlsCfg.Clone()
		if !slices.Contains(srv.TLSConfig.NextProtos, "h2") {
			srv.TLSConfig.NextProtos = append([]string{"h2", "http/1.1"}, srv.TLSConfig.NextProtos...)
		}
	}
	return srv
}

// autoSync replaces the endpoints with the client URLs of the cluster's
// members every AutoSyncInterval, and says so when they change.
func (p *Proxy) autoSync(ctx context.Context) {
	t := time.NewTicker(p.cfg.AutoSyncInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		before := p.client.Endpoints()
		syncCtx, cancel := context.WithTimeout(ctx, max(p.cfg.AutoSyncInterval, 5*time.Second))
		err := p.client.Sync(syncCtx)
		cancel()
		if err != nil {
			p.log.Warn("failed to sync endpoints", "error", err)
			continue
		}
		if after := p.client.Endpoints(); !slices.Equal(before, after) {
			p.log.Info("updated endpoints", "endpoints", after)
		}
	}
}
