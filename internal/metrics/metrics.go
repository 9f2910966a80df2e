// Package metrics defines, once, the Prometheus families a member exposes
// under etcd 3.7.3's names, types, labels, buckets and help strings, for
// what a member observes as it happens (durations, sizes, per-label counts).
// What a member already counts (revisions, proposals, store operations,
// peers, leases) is read when /metrics is scraped, by internal/api, and
// costs nothing on the request path.
//
// Each member has its own Member, so that members sharing a process (tests)
// do not mix their figures.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Buckets of etcd's histograms.
var (
	// bucket1ms: 1 ms to 8.192 s, doubling (14 buckets).
	bucket1ms = prometheus.ExponentialBuckets(0.001, 2, 14)
	// bucket100us: 100 µs to ~52 s, doubling (20 buckets).
	bucket100us = prometheus.ExponentialBuckets(0.0001, 2, 20)
	// bucket10ms16: 10 ms to ~164 s, doubling (15 buckets).
	bucket10ms16 = prometheus.ExponentialBuckets(0.01, 2, 15)
)

// Member holds the families a member observes as things happen.
type Member struct {
	WALFsync      prometheus.Histogram
	WALWrite      prometheus.Histogram
	WALWriteBytes prometheus.Gauge

	BackendCommit   prometheus.Histogram
	BoltRebalance   prometheus.Histogram // parts of a commit, as bbolt times them
	BoltSpill       prometheus.Histogram
	BoltWrite       prometheus.Histogram
	BackendDefrag   prometheus.Histogram
	BackendSnapshot prometheus.Histogram

	SnapSave        prometheus.Histogram // .snap file, total
	SnapMarshalling prometheus.Histogram // .snap file, encoding
	SnapFsync       prometheus.Histogram // .snap file, fsync
	SnapDBSave      prometheus.Histogram // a db received from the leader, total
	SnapDBFsync     prometheus.Histogram // a db received from the leader, fsync

	Hash                 prometheus.Histogram
	HashRev              prometheus.Histogram
	IndexCompactionPause prometheus.Histogram // milliseconds
	DBCompactionPause    prometheus.Histogram // milliseconds
	DBCompactionTotal    prometheus.Histogram // milliseconds

	LeaseTTL prometheus.Histogram

	WatchSendEvents   prometheus.Histogram
	WatchSendPerEvent prometheus.Histogram
	WatchSendControl  prometheus.Histogram
	WatchSendProgress prometheus.Histogram

	HealthSuccess  prometheus.Counter
	HealthFailures prometheus.Counter

	peerRoundTrip *prometheus.HistogramVec
	snapshotSend  *prometheus.HistogramVec
	snapshotRecv  *prometheus.HistogramVec

	apply          *prometheus.HistogramVec
	request        *prometheus.HistogramVec
	rangeDuration  *prometheus.HistogramVec
	clientRequests *prometheus.CounterVec
	clientRecv     prometheus.Counter
	clientSent     prometheus.Counter

	GRPC *GRPC

	mu       sync.RWMutex
	observer map[observerKey]prometheus.Observer
	counter  map[observerKey]prometheus.Counter
}

// observerKey names one child of a labelled family.
type observerKey struct {
	family *prometheus.MetricVec
	a, b   string
	ok     bool
}

func histogram(name, help string, buckets []float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
}

// New returns the families of one member; extensive adds
// grpc_server_handling_seconds (--metrics extensive).
func New(extensive bool) *Member {
	m := &Member{
		WALFsync:      histogram("etcd_disk_wal_fsync_duration_seconds", "The latency distributions of fsync called by WAL.", bucket1ms),
		WALWrite:      histogram("etcd_disk_wal_write_duration_seconds", "The latency distributions of write called by WAL.", bucket1ms),
		WALWriteBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "etcd_disk_wal_write_bytes_total", Help: "Total number of bytes written in WAL."}),

		BackendCommit:   histogram("etcd_disk_backend_commit_duration_seconds", "The latency distributions of commit called by backend.", bucket1ms),
		BoltRebalance:   histogram("etcd_debugging_disk_backend_commit_rebalance_duration_seconds", "The latency distributions of commit.rebalance called by bboltdb backend.", bucket1ms),
		BoltSpill:       histogram("etcd_debugging_disk_backend_commit_spill_duration_seconds", "The latency distributions of commit.spill called by bboltdb backend.", bucket1ms),
		BoltWrite:       histogram("etcd_debugging_disk_backend_commit_write_duration_seconds", "The latency distributions of commit.write called by bboltdb backend.", bucket1ms),
		BackendDefrag:   histogram("etcd_disk_backend_defrag_duration_seconds", "The latency distribution of backend defragmentation.", prometheus.ExponentialBuckets(0.1, 2, 13)),
		BackendSnapshot: histogram("etcd_disk_backend_snapshot_duration_seconds", "The latency distribution of backend snapshots.", prometheus.ExponentialBuckets(0.01, 2, 17)),

		SnapSave:        histogram("etcd_debugging_snap_save_total_duration_seconds", "The total latency distributions of save called by snapshot.", bucket1ms),
		SnapMarshalling: histogram("etcd_debugging_snap_save_marshalling_duration_seconds", "The marshalling cost distributions of save called by snapshot.", bucket1ms),
		SnapFsync:       histogram("etcd_snap_fsync_duration_seconds", "The latency distributions of fsync called by snap.", bucket1ms),
		SnapDBSave:      histogram("etcd_snap_db_save_total_duration_seconds", "The total latency distributions of v3 snapshot save", prometheus.ExponentialBuckets(0.1, 2, 10)),
		SnapDBFsync:     histogram("etcd_snap_db_fsync_duration_seconds", "The latency distributions of fsyncing .snap.db file", bucket1ms),

		Hash:                 histogram("etcd_mvcc_hash_duration_seconds", "The latency distribution of storage hash operation.", bucket10ms16),
		HashRev:              histogram("etcd_mvcc_hash_rev_duration_seconds", "The latency distribution of storage hash by revision operation.", bucket10ms16),
		IndexCompactionPause: histogram("etcd_debugging_mvcc_index_compaction_pause_duration_milliseconds", "Bucketed histogram of index compaction pause duration.", prometheus.ExponentialBuckets(0.5, 2, 14)),
		DBCompactionPause:    histogram("etcd_debugging_mvcc_db_compaction_pause_duration_milliseconds", "Bucketed histogram of db compaction pause duration.", prometheus.ExponentialBuckets(1, 2, 13)),
		DBCompactionTotal:    histogram("etcd_debugging_mvcc_db_compaction_total_duration_milliseconds", "Bucketed histogram of db compaction total duration.", prometheus.ExponentialBuckets(100, 2, 14)),

		LeaseTTL: histogram("etcd_debugging_lease_ttl_total", "Bucketed histogram of lease TTLs.", prometheus.ExponentialBuckets(1, 2, 24)),

		WatchSendEvents:   histogram("etcd_debugging_server_watch_send_loop_watch_stream_duration_seconds", "The total duration in seconds of running through the send loop watch stream response all events.", bucket1ms),
		WatchSendPerEvent: histogram("etcd_debugging_server_watch_send_loop_watch_stream_duration_per_event_seconds", "The average duration in seconds of running through the send loop watch stream response, per event.", bucket1ms),
		WatchSendControl:  histogram("etcd_debugging_server_watch_send_loop_control_stream_duration_seconds", "The total duration in seconds of running through the send loop control stream response.", bucket1ms),
		WatchSendProgress: histogram("etcd_debugging_server_watch_send_loop_progress_duration_seconds", "The total duration in seconds of running through the progress loop control stream response.", bucket1ms),

		HealthSuccess:  prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_server_health_success", Help: "The total number of successful health checks"}),
		HealthFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_server_health_failures", Help: "The total number of failed health checks"}),

		apply: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "etcd_server_apply_duration_seconds",
			Help: "The latency distributions of v2 apply called by backend.", Buckets: bucket100us}, []string{"version", "op", "success"}),
		request: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "etcd_server_request_duration_seconds",
			Help: "Response latency distribution in seconds for each type.", Buckets: bucket1ms}, []string{"type", "success"}),
		rangeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "etcd_server_range_duration_seconds",
			Help: "The latency distributions of txn.Range", Buckets: bucket100us}, []string{"success"}),
		clientRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "etcd_server_client_requests_total",
			Help: "The total number of client requests per client version."}, []string{"type", "client_api_version"}),
		peerRoundTrip: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "etcd_network_peer_round_trip_time_seconds",
			Help: "Round-Trip-Time histogram between peers", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}, []string{"To"}),
		snapshotSend: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "etcd_network_snapshot_send_total_duration_seconds",
			Help: "Total latency distributions of v3 snapshot sends", Buckets: prometheus.ExponentialBuckets(0.1, 2, 10)}, []string{"To"}),
		snapshotRecv: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "etcd_network_snapshot_receive_total_duration_seconds",
			Help: "Total latency distributions of v3 snapshot receives", Buckets: prometheus.ExponentialBuckets(0.1, 2, 10)}, []string{"From"}),
		clientRecv: prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_network_client_grpc_received_bytes_total", Help: "The total number of bytes received from grpc clients."}),
		clientSent: prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_network_client_grpc_sent_bytes_total", Help: "The total number of bytes sent to grpc clients."}),

		observer: map[observerKey]prometheus.Observer{},
		counter:  map[observerKey]prometheus.Counter{},
	}
	m.GRPC = newGRPC(m, extensive)
	return m
}

// Collectors returns every family of m, for a registry.
func (m *Member) Collectors() []prometheus.Collector {
	cs := []prometheus.Collector{
		m.WALFsync, m.WALWrite, m.WALWriteBytes,
		m.BackendCommit, m.BoltRebalance, m.BoltSpill, m.BoltWrite, m.BackendDefrag, m.BackendSnapshot,
		m.SnapSave, m.SnapMarshalling, m.SnapFsync, m.SnapDBSave, m.SnapDBFsync,
		m.Hash, m.HashRev, m.IndexCompactionPause, m.DBCompactionPause, m.DBCompactionTotal,
		m.LeaseTTL,
		m.WatchSendEvents, m.WatchSendPerEvent, m.WatchSendControl, m.WatchSendProgress,
		m.HealthSuccess, m.HealthFailures,
		m.apply, m.request, m.rangeDuration, m.clientRequests, m.clientRecv, m.clientSent, m.peerRoundTrip, m.snapshotSend, m.snapshotRecv,
	}
	return append(cs, m.GRPC.collectors()...)
}

// child returns (and makes once) the observer of one label combination;
// the read lock keeps the common case to a map lookup without allocation.
func (m *Member) child(vec *prometheus.HistogramVec, k observerKey, labels func() prometheus.Labels) prometheus.Observer {
	m.mu.RLock()
	o, ok := m.observer[k]
	m.mu.RUnlock()
	if ok {
		return o
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok = m.observer[k]; !ok {
		o = vec.With(labels())
		m.observer[k] = o
	}
	return o
}

func successLabel(ok bool) string {
	if ok {
		return "true"
	}
	return "false"
}

// Apply records the apply of one raft request of type op (etcd's names:
// Put, Txn, LeaseGrant...).
func (m *Member) Apply(op string, ok bool, took time.Duration) {
	k := observerKey{family: m.apply.MetricVec, a: op, ok: ok}
	m.child(m.apply, k, func() prometheus.Labels {
		return prometheus.Labels{"version": "v3", "op": op, "success": successLabel(ok)}
	}).Observe(took.Seconds())
}

// Request records the time a client request of type op took, from its
// arrival to its answer.
func (m *Member) Request(op string, ok bool, took time.Duration) {
	k := observerKey{family: m.request.MetricVec, a: op, ok: ok}
	m.child(m.request, k, func() prometheus.Labels {
		return prometheus.Labels{"type": op, "success": successLabel(ok)}
	}).Observe(took.Seconds())
}

// Range records the time a range of the store took.
func (m *Member) Range(ok bool, took time.Duration) {
	k := observerKey{family: m.rangeDuration.MetricVec, ok: ok}
	m.child(m.rangeDuration, k, func() prometheus.Labels {
		return prometheus.Labels{"success": successLabel(ok)}
	}).Observe(took.Seconds())
}

// PeerRoundTrip records a round trip to a peer (its ID in hexadecimal).
func (m *Member) PeerRoundTrip(to string, rtt time.Duration) {
	m.peerRoundTrip.WithLabelValues(to).Observe(rtt.Seconds())
}

// PeerSnapshot records a snapshot sent to a peer or received from one.
func (m *Member) PeerSnapshot(peer string, sent bool, took time.Duration) {
	vec := m.snapshotRecv
	if sent {
		vec = m.snapshotSend
	}
	vec.WithLabelValues(peer).Observe(took.Seconds())
}

// ClientRequest counts one client RPC of kind "unary" or "stream" from a
// client of the given API version.
func (m *Member) ClientRequest(kind, apiVersion string) {
	k := observerKey{family: m.clientRequests.MetricVec, a: kind, b: apiVersion}
	m.mu.RLock()
	c, ok := m.counter[k]
	m.mu.RUnlock()
	if !ok {
		m.mu.Lock()
		if c, ok = m.counter[k]; !ok {
			c = m.clientRequests.WithLabelValues(kind, apiVersion)
			m.counter[k] = c
		}
		m.mu.Unlock()
	}
	c.Inc()
}
