package grpcproxy

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// metrics are the proxy's /metrics: the grpc_server_* counts of the calls
// it serves, etcd's etcd_grpc_proxy_* families, Go's and the process's.
type metrics struct {
	registry *prometheus.Registry
	started  *prometheus.CounterVec
	handled  *prometheus.CounterVec
	// watchersCoalescing: the watchers served by a shared watch beyond
	// the first of each; eventsCoalescing: the responses of shared
	// watches passed to those watchers.
	watchersCoalescing prometheus.Gauge
	eventsCoalescing   prometheus.Counter
	// The range cache: the answers it holds, and the serializable reads
	// it answered and did not.
	cacheKeys, cacheHits, cacheMisses prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_server_started_total", Help: "Total number of RPCs started on the server.",
		}, []string{"grpc_type", "grpc_service", "grpc_method"}),
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_server_handled_total", Help: "Total number of RPCs completed on the server, regardless of success or failure.",
		}, []string{"grpc_type", "grpc_service", "grpc_method", "grpc_code"}),
	}
	m.watchersCoalescing = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "etcd_grpc_proxy_watchers_coalescing_total", Help: "Total number of current watchers coalescing"})
	m.eventsCoalescing = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "etcd_grpc_proxy_events_coalescing_total", Help: "Total number of events coalescing"})
	m.registry.MustRegister(m.started, m.handled, m.watchersCoalescing, m.eventsCoalescing,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// etcd's range cache families, gauges as etcd's.
	m.cacheKeys = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "etcd_grpc_proxy_cache_keys_total", Help: "Total number of keys/ranges cached"})
	m.cacheHits = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "etcd_grpc_proxy_cache_hits_total", Help: "Total number of cache hits"})
	m.cacheMisses = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "etcd_grpc_proxy_cache_misses_total", Help: "Total number of cache misses"})
	m.registry.MustRegister(m.cacheKeys, m.cacheHits, m.cacheMisses)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// interceptor counts every call, by its kind, service, method and code.
func (m *metrics) interceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	service, name, _ := strings.Cut(strings.TrimPrefix(info.FullMethod, "/"), "/")
	kind := "unary"
	if md, ok := methods[info.FullMethod]; ok {
		switch {
		case md.clientStream && md.serverStream:
			kind = "bidi_stream"
		case md.clientStream:
			kind = "client_stream"
		case md.serverStream:
			kind = "server_stream"
		}
	}
	m.started.WithLabelValues(kind, service, name).Inc()
	err := handler(srv, ss)
	m.handled.WithLabelValues(kind, service, name, status.Code(err).String()).Inc()
	return err
}
