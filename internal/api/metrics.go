package api

import (
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/cairnkv/cairn/internal/featuregate"
	"github.com/cairnkv/cairn/internal/server"
	"github.com/cairnkv/cairn/internal/version"
)

// newMetrics registers every family etcd 3.7.3 exposes, under its names,
// types, labels, buckets and help: those the member observes as it runs
// (internal/metrics, through s.Metrics()), and those read here when
// /metrics is scraped, which cost nothing on the request path.
func newMetrics(a *API) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	s := a.s
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	counts := func(f func(server.Counts) uint64) func() float64 {
		return func() float64 { return float64(f(s.Counts())) }
	}
	stats := s.StoreStats()
	watch := func(pick func(streams, watchers, slow, pending int64) int64) func() float64 {
		return func() float64 { return float64(pick(s.Store().WatchCounts())) }
	}
	leases := func(pick func(granted, revoked, renewed int64) int64) func() float64 {
		return func() float64 { return float64(pick(s.Lessor().Counts())) }
	}
	reg.MustRegister(a.metrics.Collectors()...)
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		gauge("os_fd_used", "The number of used file descriptors.", func() float64 { used, _ := fdUsage(); return float64(used) }),
		gauge("os_fd_limit", "The file descriptor limit.", func() float64 { _, limit := fdUsage(); return float64(limit) }),

		// raft and the server
		gauge("etcd_server_has_leader", "Whether or not a leader exists. 1 is existence, 0 is not.",
			func() float64 { return b2f(s.Leader() != 0) }),
		gauge("etcd_server_is_leader", "Whether or not this member is a leader. 1 if is, 0 otherwise.",
			func() float64 { return b2f(s.Leader() == s.ID()) }),
		gauge("etcd_server_is_learner", "Whether or not this member is a learner. 1 if is, 0 otherwise.",
			func() float64 { return b2f(s.IsLearner()) }),
		counter("etcd_server_leader_changes_seen_total", "The number of leader changes seen.",
			counts(func(c server.Counts) uint64 { return c.LeaderChanges })),
		gauge("etcd_server_proposals_committed_total", "The total number of consensus proposals committed.",
			func() float64 { return float64(s.CommittedIndex()) }),
		gauge("etcd_server_proposals_applied_total", "The total number of consensus proposals applied.",
			func() float64 { return float64(s.AppliedIndex()) }),
		gauge("etcd_server_proposals_pending", "The current number of pending proposals to commit.",
			func() float64 { return float64(s.ProposalsPending()) }),
		counter("etcd_server_proposals_failed_total", "The total number of failed proposals seen.",
			counts(func(c server.Counts) uint64 { return c.ProposalsFailed })),
		counter("etcd_server_slow_apply_total", "The total number of slow apply requests (likely overloaded from slow disk).",
			counts(func(c server.Counts) uint64 { return c.SlowApplies })),
		counter("etcd_server_read_indexes_failed_total", "The total number of failed read indexes seen.",
			counts(func(c server.Counts) uint64 { return c.ReadIndexFailed })),
		counter("etcd_server_slow_read_indexes_total", "The total number of pending read indexes not in sync with leader's or timed out read index requests.",
			counts(func(c server.Counts) uint64 { return c.SlowReadIndexes })),
		counter("etcd_server_learner_promote_successes", "The total number of successful learner promotions while this member is leader.",
			counts(func(c server.Counts) uint64 { return c.LearnerPromotes })),
		gauge("etcd_server_snapshot_apply_in_progress_total", "1 if the server is applying the incoming snapshot. 0 if none.",
			func() float64 { return b2f(s.Counts().ApplyingSnapshot) }),
		counter("etcd_server_heartbeat_send_failures_total", "The total number of leader heartbeat send failures (likely overloaded from slow disk).",
			func() float64 { _, hb := s.Transport().Counts(); return float64(hb) }),
		gauge("etcd_server_quota_backend_bytes", "Current backend storage quota size in bytes.",
			func() float64 { return float64(s.Config().QuotaBackendBytes) }),
		gauge("etcd_debugging_auth_revision", "The current revision of auth store.",
			func() float64 { return float64(s.AuthStore().Revision()) }),
		gauge("etcd_disk_defrag_inflight", "Whether or not defrag is active on the member. 1 means active, 0 means not.",
			func() float64 { return b2f(a.defragging.Load()) }),

		// the store
		gauge("etcd_mvcc_db_total_size_in_bytes", "Total size of the underlying database physically allocated in bytes.",
			func() float64 { return float64(s.Store().Backend().Size()) }),
		gauge("etcd_mvcc_db_total_size_in_use_in_bytes", "Total size of the underlying database logically in use in bytes.",
			func() float64 { return float64(s.Store().Backend().SizeInUse()) }),
		gauge("etcd_mvcc_db_open_read_transactions", "The number of currently open read transactions",
			func() float64 { return float64(s.Store().Backend().OpenReads()) }),
		gauge("etcd_debugging_mvcc_current_revision", "The current revision of store.",
			func() float64 { return float64(s.Store().Rev()) }),
		gauge("etcd_debugging_mvcc_compact_revision", "The revision of the last compaction in store.",
			func() float64 { return float64(s.Store().CompactRev()) }),
		gauge("etcd_debugging_mvcc_keys_total", "Total number of keys.",
			func() float64 { return float64(s.Store().Keys()) }),
		counter("etcd_mvcc_put_total", "Total number of puts seen by this member.",
			func() float64 { return float64(stats.Puts.Load()) }),
		counter("etcd_mvcc_delete_total", "Total number of deletes seen by this member.",
			func() float64 { return float64(stats.Deletes.Load()) }),
		counter("etcd_mvcc_range_total", "Total number of ranges seen by this member.",
			func() float64 { return float64(stats.Ranges.Load()) }),
		counter("etcd_mvcc_txn_total", "Total number of txns seen by this member.",
			func() float64 { return float64(stats.Txns.Load()) }),
		gauge("etcd_debugging_mvcc_total_put_size_in_bytes", "The total size of put kv pairs seen by this member.",
			func() float64 { return float64(stats.PutBytes.Load()) }),
		counter("etcd_debugging_mvcc_events_total", "Total number of events sent by this member.",
			func() float64 { return float64(stats.EventsSent.Load()) }),
		counter("etcd_debugging_mvcc_db_compaction_keys_total", "Total number of db keys compacted.",
			func() float64 { return float64(stats.CompactedKeys.Load()) }),
		gauge("etcd_debugging_mvcc_db_compaction_last", "The unix time of the last db compaction. Resets to 0 on start.",
			func() float64 { return float64(stats.LastCompaction.Load()) }),
		gauge("etcd_debugging_mvcc_watch_stream_total", "Total number of watch streams.",
			watch(func(streams, _, _, _ int64) int64 { return streams })),
		gauge("etcd_debugging_mvcc_watcher_total", "Total number of watchers.",
			watch(func(_, watchers, _, _ int64) int64 { return watchers })),
		gauge("etcd_debugging_mvcc_slow_watcher_total", "Total number of unsynced slow watchers.",
			watch(func(_, _, slow, _ int64) int64 { return slow })),
		gauge("etcd_debugging_mvcc_pending_events_total", "Total number of pending events to be sent.",
			watch(func(_, _, _, pending int64) int64 { return pending })),

		// leases
		counter("etcd_debugging_lease_granted_total", "The total number of granted leases.",
			leases(func(granted, _, _ int64) int64 { return granted })),
		counter("etcd_debugging_lease_revoked_total", "The total number of revoked leases.",
			leases(func(_, revoked, _ int64) int64 { return revoked })),
		counter("etcd_debugging_lease_renewed_total", "The number of renewed leases seen by the leader.",
			leases(func(_, _, renewed int64) int64 { return renewed })),
		counter("etcd_debugging_server_lease_expired_total", "The total number of expired leases.",
			counts(func(c server.Counts) uint64 { return c.LeasesExpired })),

		// labelled: identity, versions, features, peers
		labelled(func(ch chan<- prometheus.Metric) {
			one := func(name, help, label, value string) {
				ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, []string{label}, nil), prometheus.GaugeValue, 1, value)
			}
			one("etcd_server_id", "Server or member ID in hexadecimal format. 1 for 'server_id' label with current ID.", "server_id", formatID(s.ID()))
			one("etcd_server_version", "Which version is running. 1 for 'server_version' label with current version.", "server_version", version.ServerVersion)
			one("etcd_server_go_version", "Which Go version server is running with. 1 for 'server_go_version' label with current version.", "server_go_version", runtime.Version())
			if cv := majorMinor(s.ClusterVersion()); cv != "" {
				one("etcd_cluster_version", "Which version is running. 1 for 'cluster_version' label with current cluster version", "cluster_version", cv)
			}
			feature := prometheus.NewDesc("etcd_server_feature_enabled", "Whether or not a feature is enabled. 1 is enabled, 0 is not.", []string{"name", "stage"}, nil)
			for _, name := range featuregate.Names() {
				ch <- prometheus.MustNewConstMetric(feature, prometheus.GaugeValue, b2f(s.Config().Features.Enabled(name)), name, featuregate.Stage(name))
			}
			a.collectPeers(ch)
		}),
	)
	reg.MustRegister(notKept()...)
	return reg
}

// InactivePeersMetric is cairn's family, beside etcd's, of the peers with
// no open message stream and since when; `endpoint status --cluster`
// reads it by this name.
const InactivePeersMetric = "cairn_network_peer_inactive_since_timestamp_seconds"

var (
	knownPeers  = prometheus.NewDesc("etcd_network_known_peers", "The current number of known peers.", []string{"Local", "Remote"}, nil)
	activePeers = prometheus.NewDesc("etcd_network_active_peers", "The current number of active peer connections.", []string{"Local", "Remote"}, nil)
	// cairn's own: what `endpoint status --cluster` says of a member that
	// does not answer.
	inactivePeers = prometheus.NewDesc(InactivePeersMetric, "Since when (Unix time) no message stream from the peer has been open: when the last one broke, or when the peer became known.", []string{"Local", "Remote"}, nil)
	peerSent      = prometheus.NewDesc("etcd_network_peer_sent_bytes_total", "The total number of bytes sent to peers.", []string{"To"}, nil)
	peerRecv      = prometheus.NewDesc("etcd_network_peer_received_bytes_total", "The total number of bytes received from peers.", []string{"From"}, nil)
	sendFailed    = prometheus.NewDesc("etcd_network_peer_sent_failures_total", "The total number of send failures from peers.", []string{"To"}, nil)
	lostPeers     = prometheus.NewDesc("etcd_network_disconnected_peers_total", "The total number of disconnected peers.", []string{"Local", "Remote"}, nil)
	snapSent      = prometheus.NewDesc("etcd_network_snapshot_send_success", "Total number of successful snapshot sends", []string{"To"}, nil)
	snapSending   = prometheus.NewDesc("etcd_network_snapshot_send_inflights_total", "Total number of inflight snapshot sends", []string{"To"}, nil)
	snapRecv      = prometheus.NewDesc("etcd_network_snapshot_receive_success", "Total number of successful snapshot receives", []string{"From"}, nil)
	snapRecving   = prometheus.NewDesc("etcd_network_snapshot_receive_inflights_total", "Total number of inflight snapshot receives", []string{"From"}, nil)
)

// collectPeers reports the members this one knows (itself included, as
// etcd does), the peers with an open message stream to it, and what was
// exchanged with each: bytes, failed sends, lost streams, snapshots. As in
// etcd, a peer shows in a family once what it counts has happened.
func (a *API) collectPeers(ch chan<- prometheus.Metric) {
	s := a.s
	local := formatID(s.ID())
	for _, m := range s.Members() {
		ch <- prometheus.MustNewConstMetric(knownPeers, prometheus.GaugeValue, 1, local, formatID(m.ID))
		if m.ID != s.ID() {
			active := 0.0
			if !s.Transport().ActiveSince(m.ID).IsZero() {
				active = 1
			}
			ch <- prometheus.MustNewConstMetric(activePeers, prometheus.GaugeValue, active, local, formatID(m.ID))
			if since := s.Transport().InactiveSince(m.ID); !since.IsZero() {
				ch <- prometheus.MustNewConstMetric(inactivePeers, prometheus.GaugeValue, float64(since.UnixMilli())/1000, local, formatID(m.ID))
			}
		}
	}
	peers, _ := s.Transport().Counts()
	for _, p := range peers {
		id := formatID(p.ID)
		emit := func(d *prometheus.Desc, t prometheus.ValueType, v float64, when bool, labels ...string) {
			if when {
				ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
			}
		}
		emit(peerSent, prometheus.CounterValue, float64(p.Sent), p.Sent > 0, id)
		emit(peerRecv, prometheus.CounterValue, float64(p.Received), p.Received > 0, id)
		emit(sendFailed, prometheus.CounterValue, float64(p.SendFailures), p.SendFailures > 0, id)
		emit(lostPeers, prometheus.CounterValue, float64(p.Disconnects), p.Disconnects > 0, local, id)
		sent := p.SnapshotsSent+p.SnapshotsSending > 0
		emit(snapSent, prometheus.CounterValue, float64(p.SnapshotsSent), sent, id)
		emit(snapSending, prometheus.GaugeValue, float64(p.SnapshotsSending), sent, id)
		received := p.SnapshotsReceived+p.SnapshotsReceiving > 0
		emit(snapRecv, prometheus.CounterValue, float64(p.SnapshotsReceived), received, id)
		emit(snapRecving, prometheus.GaugeValue, float64(p.SnapshotsReceiving), received, id)
	}
}

// labelled is a collector of families whose label values are read at
// scrape time.
type labelled func(ch chan<- prometheus.Metric)

func (l labelled) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(l, ch) }
func (l labelled) Collect(ch chan<- prometheus.Metric) { l(ch) }

// majorMinor turns a version ("3.7.0") into etcd's cluster version label
// ("3.7"); empty while the cluster has none.
func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[0] + "." + parts[1]
}

// notKept are the families etcd exposes for things cairn does not have,
// registered with etcd's types so that dashboards and etcd's own checks
// find them; their value is a true 0.
func notKept() []prometheus.Collector {
	zero := func() float64 { return 0 }
	return []prometheus.Collector{
		// etcd's v2 store, which cairn does not have (v3 API only).
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "etcd_debugging_store_expires_total", Help: "Total number of expired keys."}, zero),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "etcd_debugging_store_watch_requests_total", Help: "Total number of incoming watch requests (new or reestablished)."}, zero),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_debugging_store_watchers", Help: "Count of currently active watchers."}, zero),
		// etcd's gRPC proxy (etcd grpc-proxy), which cairn does not have.
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_grpc_proxy_cache_hits_total", Help: "Total number of cache hits"}, zero),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_grpc_proxy_cache_keys_total", Help: "Total number of keys/ranges cached"}, zero),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_grpc_proxy_cache_misses_total", Help: "Total number of cache misses"}, zero),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "etcd_grpc_proxy_events_coalescing_total", Help: "Total number of events coalescing"}, zero),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_grpc_proxy_watchers_coalescing_total", Help: "Total number of current watchers coalescing"}, zero),
	}
}

// observeWatchSend records a watch response sent to the client: events
// (in all and per event), or a progress notification.
func (a *API) observeWatchSend(events int, took time.Duration) {
	m := a.metrics
	if events == 0 {
		m.WatchSendProgress.Observe(took.Seconds())
		return
	}
	m.WatchSendEvents.Observe(took.Seconds())
	m.WatchSendPerEvent.Observe(took.Seconds() / float64(events))
}
