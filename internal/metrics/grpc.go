package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// GRPC counts the RPCs of a gRPC server as etcd exposes them: the
// grpc_server_* families (labels grpc_type, grpc_service, grpc_method and,
// once handled, grpc_code), and the bytes of client messages.
type GRPC struct {
	m        *Member
	started  *prometheus.CounterVec
	handled  *prometheus.CounterVec
	received *prometheus.CounterVec
	sent     *prometheus.CounterVec
	handling *prometheus.HistogramVec // nil unless --metrics extensive

	methods map[string]*method // by full method name; filled by Init
}

// method holds the children of one RPC method, resolved once.
type method struct {
	started, received, sent prometheus.Counter
	handled                 map[codes.Code]prometheus.Counter
	handling                prometheus.Observer
}

// allCodes are the status codes a handled RPC may end with.
var allCodes = []codes.Code{codes.OK, codes.Canceled, codes.Unknown, codes.InvalidArgument, codes.DeadlineExceeded,
	codes.NotFound, codes.AlreadyExists, codes.PermissionDenied, codes.ResourceExhausted, codes.FailedPrecondition,
	codes.Aborted, codes.OutOfRange, codes.Unimplemented, codes.Internal, codes.Unavailable, codes.DataLoss, codes.Unauthenticated}

func newGRPC(m *Member, extensive bool) *GRPC {
	labels := []string{"grpc_type", "grpc_service", "grpc_method"}
	g := &GRPC{
		m: m,
		started: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "grpc_server_started_total",
			Help: "Total number of RPCs started on the server."}, labels),
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "grpc_server_handled_total",
			Help: "Total number of RPCs completed on the server, regardless of success or failure."}, append(labels[:3:3], "grpc_code")),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "grpc_server_msg_received_total",
			Help: "Total number of RPC stream messages received on the server."}, labels),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "grpc_server_msg_sent_total",
			Help: "Total number of gRPC stream messages sent by the server."}, labels),
		methods: map[string]*method{},
	}
	if extensive {
		g.handling = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "grpc_server_handling_seconds",
			Help:    "Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}}, labels)
	}
	return g
}

func (g *GRPC) collectors() []prometheus.Collector {
	cs := []prometheus.Collector{g.started, g.handled, g.received, g.sent}
	if g.handling != nil {
		cs = append(cs, g.handling)
	}
	return cs
}

// Init makes the children of every method srv serves, at zero, as etcd's
// interceptors do, so that every method and code shows before it is used.
// It must be called once, after the services are registered and before the
// server serves.
func (g *GRPC) Init(srv *grpc.Server) {
	for service, info := range srv.GetServiceInfo() {
		for _, mi := range info.Methods {
			typ := "unary"
			switch {
			case mi.IsClientStream && mi.IsServerStream:
				typ = "bidi_stream"
			case mi.IsClientStream:
				typ = "client_stream"
			case mi.IsServerStream:
				typ = "server_stream"
			}
			lv := []string{typ, service, mi.Name}
			m := &method{
				started: g.started.WithLabelValues(lv...), received: g.received.WithLabelValues(lv...),
				sent: g.sent.WithLabelValues(lv...), handled: map[codes.Code]prometheus.Counter{},
			}
			for _, c := range allCodes {
				m.handled[c] = g.handled.WithLabelValues(typ, service, mi.Name, c.String())
			}
			if g.handling != nil {
				m.handling = g.handling.WithLabelValues(lv...)
			}
			g.methods["/"+service+"/"+mi.Name] = m
		}
	}
}

// clientAPIVersion is the version a client states in its metadata
// (etcd's clientv3 sends "client-api-version"), "unknown" without one.
func clientAPIVersion(ctx context.Context) string {
	if v := metadata.ValueFromIncomingContext(ctx, "client-api-version"); len(v) > 0 && v[0] != "" {
		return v[0]
	}
	return "unknown"
}

func (g *GRPC) done(m *method, start time.Time, err error) {
	code := status.Code(err)
	if c, ok := m.handled[code]; ok {
		c.Inc()
	}
	if m.handling != nil {
		m.handling.Observe(time.Since(start).Seconds())
	}
}

func messageSize(msg any) int {
	switch m := msg.(type) {
	case proto.Message:
		return proto.Size(m)
	case interface{ EncodedSize() int }: // a message sent in its wire form
		return m.EncodedSize()
	}
	return 0
}

// Unary is the outermost unary interceptor of the member's gRPC server.
func (g *GRPC) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	m := g.methods[info.FullMethod]
	if m == nil {
		return handler(ctx, req)
	}
	start := time.Now()
	m.started.Inc()
	m.received.Inc()
	g.m.clientRecv.Add(float64(messageSize(req)))
	g.m.ClientRequest("unary", clientAPIVersion(ctx))
	resp, err := handler(ctx, req)
	if err == nil {
		m.sent.Inc()
		g.m.clientSent.Add(float64(messageSize(resp)))
	}
	g.done(m, start, err)
	return resp, err
}

// Stream is the outermost stream interceptor of the member's gRPC server.
func (g *GRPC) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	m := g.methods[info.FullMethod]
	if m == nil {
		return handler(srv, ss)
	}
	start := time.Now()
	m.started.Inc()
	g.m.ClientRequest("stream", clientAPIVersion(ss.Context()))
	err := handler(srv, &countedStream{ServerStream: ss, g: g, m: m})
	g.done(m, start, err)
	return err
}

// countedStream counts the messages of a stream and their bytes.
type countedStream struct {
	grpc.ServerStream
	g *GRPC
	m *method
}

func (s *countedStream) SendMsg(msg any) error {
	err := s.ServerStream.SendMsg(msg)
	if err == nil {
		s.m.sent.Inc()
		s.g.m.clientSent.Add(float64(messageSize(msg)))
	}
	return err
}

func (s *countedStream) RecvMsg(msg any) error {
	err := s.ServerStream.RecvMsg(msg)
	if err == nil {
		s.m.received.Inc()
		s.g.m.clientRecv.Add(float64(messageSize(msg)))
	}
	return err
}
