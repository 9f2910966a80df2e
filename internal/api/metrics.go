package api

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// newMetrics registers the member's metrics, under etcd's names. Each is
// read when /metrics is scraped, so none costs anything on the request path.
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
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		gauge("etcd_server_has_leader", "Whether or not a leader exists. 1 is existence, 0 is not.",
			func() float64 { return b2f(s.Leader() != 0) }),
		gauge("etcd_server_is_leader", "Whether or not this member is a leader. 1 if is, 0 otherwise.",
			func() float64 { return b2f(s.Leader() == s.ID()) }),
		gauge("etcd_server_is_learner", "Whether or not this member is a learner. 1 if is, 0 otherwise.",
			func() float64 { return b2f(s.IsLearner()) }),
		counter("etcd_server_leader_changes_seen_total", "The number of leader changes seen.",
			func() float64 { return float64(s.LeaderChanges()) }),
		gauge("etcd_server_proposals_committed_total", "The total number of consensus proposals committed.",
			func() float64 { return float64(s.CommittedIndex()) }),
		gauge("etcd_server_proposals_applied_total", "The total number of consensus proposals applied.",
			func() float64 { return float64(s.AppliedIndex()) }),
		gauge("etcd_server_proposals_pending", "The current number of pending proposals to commit.",
			func() float64 { return float64(s.ProposalsPending()) }),
		counter("etcd_server_proposals_failed_total", "The total number of failed proposals seen.",
			func() float64 { return float64(s.ProposalsFailed()) }),
		gauge("etcd_mvcc_db_total_size_in_bytes", "Total size of the underlying database physically allocated in bytes.",
			func() float64 { return float64(s.Store().Backend().Size()) }),
		gauge("etcd_mvcc_db_total_size_in_use_in_bytes", "Total size of the underlying database logically in use in bytes.",
			func() float64 { return float64(s.Store().Backend().SizeInUse()) }),
		gauge("etcd_server_quota_backend_bytes", "Current backend storage quota size in bytes.",
			func() float64 { return float64(s.Config().QuotaBackendBytes) }),
		gauge("etcd_debugging_mvcc_current_revision", "The current revision of store.",
			func() float64 { return float64(s.Store().Rev()) }),
		gauge("etcd_debugging_mvcc_compact_revision", "The revision of the last compaction in store.",
			func() float64 { return float64(s.Store().CompactRev()) }),
	)
	return reg
}
