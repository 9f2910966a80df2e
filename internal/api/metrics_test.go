package api

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/servertls"
	"github.com/cairnkv/cairn/internal/testnet"
	"github.com/cairnkv/cairn/internal/tlstest"
)

// family is one metric family as /metrics shows it.
type family struct {
	typ, help string
	labels    []string // sorted, without le
	buckets   []string // upper bounds of a histogram, in order
	samples   map[string]float64
}

// scrape reads url's /metrics in Prometheus' text format.
func scrape(t *testing.T, url string) map[string]*family {
	t.Helper()
	fams, err := tryScrape(t, url)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// tryScrape is scrape for a poll: a failed request is its error.
func tryScrape(t *testing.T, url string) (map[string]*family, error) {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %s", url, resp.Status)
	}
	return parseMetrics(t, resp.Body), nil
}

func parseMetrics(t *testing.T, r io.Reader) map[string]*family {
	t.Helper()
	fams := map[string]*family{}
	helps := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name, help, _ := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
			helps[name] = help
		case strings.HasPrefix(line, "# TYPE "):
			name, typ, _ := strings.Cut(strings.TrimPrefix(line, "# TYPE "), " ")
			fams[name] = &family{typ: typ, help: helps[name], samples: map[string]float64{}}
		case line != "" && !strings.HasPrefix(line, "#"):
			series, value, ok := strings.Cut(line, " ")
			v, err := strconv.ParseFloat(value, 64)
			if !ok || err != nil {
				t.Fatalf("bad sample line %q", line)
			}
			name, labels, _ := strings.Cut(strings.TrimSuffix(series, "}"), "{")
			f := fams[name]
			if f == nil {
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if base, ok := strings.CutSuffix(name, suffix); ok && fams[base] != nil {
						f = fams[base]
					}
				}
			}
			if f == nil {
				t.Fatalf("sample %q of no family", line)
			}
			f.samples[series] = v
			for _, kv := range splitLabels(labels) {
				k, val, _ := strings.Cut(kv, "=")
				val = strings.Trim(val, `"`)
				if k == "le" && strings.HasSuffix(name, "_bucket") {
					if !slices.Contains(f.buckets, val) {
						f.buckets = append(f.buckets, val)
					}
				} else if !slices.Contains(f.labels, k) {
					f.labels = append(f.labels, k)
					sort.Strings(f.labels)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return fams
}

// splitLabels splits `a="x",b="y"` (values without commas or quotes
// inside, as in these families).
func splitLabels(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// value returns a sample's value, the series named as /metrics prints it
// (`name` or `name{a="x",b="y"}`, labels in order), and whether it is there.
func value(fams map[string]*family, series string) (float64, bool) {
	name, _, _ := strings.Cut(series, "{")
	for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
		if f := fams[strings.TrimSuffix(name, suffix)]; f != nil {
			v, ok := f.samples[series]
			return v, ok
		}
	}
	return 0, false
}

// metricsWorkload does on a fresh member what the comparison with etcd
// needs every family to show: writes, reads, a txn, a lease granted, kept
// alive and revoked, a watch that receives an event, a compaction, a
// defragmentation, hashes, a snapshot and a health check.
func metricsWorkload(t *testing.T, curl string) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{curl}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	for i := 1; i <= 3; i++ {
		_, err := cli.Put(ctx, fmt.Sprintf("k%d", i), "v")
		check("put", err)
	}
	_, err = cli.Get(ctx, "k1")
	check("get", err)
	_, err = cli.Get(ctx, "k", clientv3.WithPrefix())
	check("get prefix", err)
	_, err = cli.Delete(ctx, "k3")
	check("delete", err)
	_, err = cli.Txn(ctx).If(clientv3.Compare(clientv3.Version("k1"), ">", 0)).Then(clientv3.OpPut("k4", "v"), clientv3.OpGet("k2")).Commit()
	check("txn", err)
	lg, err := cli.Grant(ctx, 100)
	check("grant", err)
	_, err = cli.KeepAliveOnce(ctx, lg.ID)
	check("keepalive", err)
	_, err = cli.Revoke(ctx, lg.ID)
	check("revoke", err)
	wctx, wcancel := context.WithCancel(ctx)
	wch := cli.Watch(clientv3.WithRequireLeader(wctx), "k1")
	_, err = cli.Put(ctx, "k1", "x") // the watch is created before its first event is waited for
	check("put watched", err)
	select {
	case wr := <-wch:
		if len(wr.Events) == 0 {
			t.Fatalf("watch: %v", wr.Err())
		}
	case <-ctx.Done():
		t.Fatal("no watch event")
	}
	wcancel()
	_, err = cli.Compact(ctx, 3, clientv3.WithCompactPhysical())
	check("compact", err)
	_, err = cli.Defragment(ctx, curl)
	check("defragment", err)
	_, err = cli.HashKV(ctx, curl, 0)
	check("hashkv", err)
	rc, err := cli.Snapshot(ctx)
	check("snapshot", err)
	_, err = io.Copy(io.Discard, rc)
	check("snapshot read", err)
	rc.Close()
	resp, err := http.Get(curl + "/health")
	check("health", err)
	resp.Body.Close()
}

// etcdFamilies is the committed list of etcd 3.7.3's families after
// metricsWorkload on a single member with --metrics extensive, one per
// line: name, type, labels, buckets (comma-separated, "-" for none), help.
const etcdFamilies = "../../testdata/etcd-3.7.3-metrics.txt"

var updateFamilies = flag.Bool("update-metrics", false, "rewrite "+etcdFamilies+" from the reference etcd")

func formatFamilies(fams map[string]*family) string {
	var lines []string
	dash := func(s []string) string {
		if len(s) == 0 {
			return "-"
		}
		return strings.Join(s, ",")
	}
	for name, f := range fams {
		if runtimeFamily(name) {
			lines = append(lines, fmt.Sprintf("%s %s - - -", name, f.typ))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s %s %s %s %s", name, f.typ, dash(f.labels), dash(f.buckets), f.help))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

func readFamilies(t *testing.T) map[string]*family {
	t.Helper()
	b, err := os.ReadFile(etcdFamilies)
	if err != nil {
		t.Fatal(err)
	}
	fams := map[string]*family{}
	undash := func(s string) []string {
		if s == "-" {
			return nil
		}
		return strings.Split(s, ",")
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, " ", 5)
		if len(parts) != 5 {
			t.Fatalf("%s: bad line %q", etcdFamilies, line)
		}
		fams[parts[0]] = &family{typ: parts[1], labels: undash(parts[2]), buckets: undash(parts[3]), help: parts[4]}
	}
	return fams
}

// runtimeFamily: the Go runtime's and the process' families, which depend
// on the Go release and the client library: only their presence counts.
func runtimeFamily(name string) bool {
	return strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_")
}

// TestMetricsMatchEtcd runs the same workload on etcd 3.7.3 and on cairn,
// both with --metrics extensive, and checks that every family etcd then
// exposes is in cairn's /metrics with the same type, labels, buckets and
// help. Without the reference etcd it checks against the committed list
// of etcd's families, which it otherwise checks is still etcd's.
func TestMetricsMatchEtcd(t *testing.T) {
	var want map[string]*family
	if !*updateFamilies {
		want = readFamilies(t)
	}
	dir, err := etcdref.Dir()
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "etcd"))
	}
	if err == nil {
		ecurl := etcdref.Start(t, testnet.FreeURL(t), testnet.FreeURL(t), "--metrics", "extensive")
		metricsWorkload(t, ecurl)
		live := scrape(t, ecurl)
		if *updateFamilies {
			if err := os.WriteFile(etcdFamilies, []byte(formatFamilies(live)), 0o644); err != nil {
				t.Fatal(err)
			}
			want = live
		}
		if got, committed := formatFamilies(live), formatFamilies(want); got != committed {
			t.Errorf("%s is no longer what etcd 3.7.3 exposes (go test -run TestMetricsMatchEtcd -update-metrics rewrites it):\n%s",
				etcdFamilies, diffLines(strings.Split(committed, "\n"), strings.Split(got, "\n")))
		}
		want = live
	} else {
		t.Logf("reference etcd unavailable (%v): comparing with %s", err, etcdFamilies)
	}
	if len(want) < 100 {
		t.Fatalf("only %d families to compare with", len(want))
	}
	curl, _, _ := startMember(t, memberconfig.Config{Metrics: "extensive"})
	metricsWorkload(t, curl)
	got := scrape(t, curl)
	for name, w := range want {
		g := got[name]
		switch {
		case g == nil:
			t.Errorf("%s (%s) is missing", name, w.typ)
		case g.typ != w.typ:
			t.Errorf("%s is a %s, etcd's a %s", name, g.typ, w.typ)
		case runtimeFamily(name):
		case !slices.Equal(g.labels, w.labels):
			t.Errorf("%s has labels %v, etcd's %v", name, g.labels, w.labels)
		case !slices.Equal(g.buckets, w.buckets):
			t.Errorf("%s has buckets %v, etcd's %v", name, g.buckets, w.buckets)
		case g.help != w.help:
			t.Errorf("%s has help %q, etcd's %q", name, g.help, w.help)
		}
	}
}

// TestMetricsCountWhatHappens: the figures are the member's own, not
// placeholders: N puts show as N, each unary call is counted, the WAL's
// fsyncs and the backend's commits are timed, a watch counts its stream,
// watcher and events, a lease its grant, a raft snapshot its parts.
func TestMetricsCountWhatHappens(t *testing.T) {
	curl, s, cli := startMember(t, memberconfig.Config{SnapshotCount: 5})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before := scrape(t, curl)
	unary := `etcd_server_client_requests_total{client_api_version="3.7",type="unary"}`
	unaryBefore, _ := value(before, unary)
	const n = 7
	for i := range n {
		if _, err := cli.Put(ctx, fmt.Sprintf("k%d", i), "value"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Delete(ctx, "k0"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Grant(ctx, 30); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	wch := cli.Watch(wctx, "w", clientv3.WithRev(1))
	waitFor(t, 20*time.Second, "the watcher", func() bool { v, _ := value(scrape(t, curl), "etcd_debugging_mvcc_watcher_total"); return v == 1 })
	if _, err := cli.Put(ctx, "w", "x"); err != nil {
		t.Fatal(err)
	}
	<-wch
	backend := s.Store().Backend()
	if err := backend.ForceCommit(); err != nil {
		t.Fatal(err)
	}
	got := scrape(t, curl)
	for series, want := range map[string]float64{
		"etcd_mvcc_put_total":                    n + 1,
		"etcd_mvcc_delete_total":                 1,
		"etcd_debugging_mvcc_keys_total":         n,
		"etcd_debugging_mvcc_watch_stream_total": 1,
		"etcd_debugging_mvcc_watcher_total":      1,
		"etcd_debugging_mvcc_events_total":       1,
		"etcd_debugging_lease_granted_total":     1,
		"etcd_debugging_lease_ttl_total_count":   1,
		unary:                                    unaryBefore + n + 3, // the puts, the delete, the grant, the watched put
		`grpc_server_handled_total{grpc_code="OK",grpc_method="Put",grpc_service="etcdserverpb.KV",grpc_type="unary"}`: n + 1,
		`grpc_server_started_total{grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"}`:     1,
		`etcd_server_apply_duration_seconds_count{op="Put",success="true",version="v3"}`:                               n + 1,
		`etcd_server_request_duration_seconds_count{success="true",type="Put"}`:                                        n + 1,
		`etcd_debugging_mvcc_db_compaction_keys_total`:                                                                 0,
	} {
		if v, ok := value(got, series); !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
	for _, series := range []string{"etcd_disk_wal_fsync_duration_seconds_count", "etcd_disk_wal_write_duration_seconds_count",
		"etcd_disk_wal_write_bytes_total", "etcd_disk_backend_commit_duration_seconds_count",
		"etcd_network_client_grpc_received_bytes_total", "etcd_network_client_grpc_sent_bytes_total"} {
		if v, _ := value(got, series); v <= 0 {
			t.Errorf("%s = %v, want more than 0", series, v)
		}
	}
	for _, series := range []string{"etcd_debugging_snap_save_total_duration_seconds_count",
		"etcd_debugging_snap_save_marshalling_duration_seconds_count", "etcd_snap_fsync_duration_seconds_count"} {
		waitFor(t, 20*time.Second, series+" > 0", func() bool { v, _ := value(scrape(t, curl), series); return v > 0 })
	}
	// A watch stream ended by its client is handled as Canceled, as etcd's.
	wcancel()
	canceled := `grpc_server_handled_total{grpc_code="Canceled",grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"}`
	waitFor(t, 20*time.Second, canceled+" 1", func() bool { v, _ := value(scrape(t, curl), canceled); return v == 1 })
	waitFor(t, 20*time.Second, "the watch stream to close", func() bool {
		f := scrape(t, curl)
		streams, _ := value(f, "etcd_debugging_mvcc_watch_stream_total")
		pending, _ := value(f, "etcd_debugging_mvcc_pending_events_total")
		return streams == 0 && pending == 0
	})
}

// TestMetricsOfPeers: in a cluster of three, each member knows every
// member and its peers active, the leader and each follower count the
// bytes they send each other, and the round trips to the peers are timed
// (every 5 s, in etcd's buckets).
func TestMetricsOfPeers(t *testing.T) {
	ms := startInProcess(t, 3, nil)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ms[0].curl}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	positive := func(m *inProcessMember, series string) {
		t.Helper()
		waitFor(t, 20*time.Second, series+" on "+formatID(m.s.ID()), func() bool { v, _ := value(scrape(t, m.curl), series); return v > 0 })
	}
	leader := ms[0].s.Leader()
	for _, m := range ms {
		local := formatID(m.s.ID())
		for _, peer := range ms {
			remote := formatID(peer.s.ID())
			positive(m, `etcd_network_known_peers{Local="`+local+`",Remote="`+remote+`"}`)
			if peer == m {
				continue
			}
			positive(m, `etcd_network_active_peers{Local="`+local+`",Remote="`+remote+`"}`)
			if m.s.ID() == leader || peer.s.ID() == leader {
				positive(m, `etcd_network_peer_sent_bytes_total{To="`+remote+`"}`)
				positive(m, `etcd_network_peer_received_bytes_total{From="`+remote+`"}`)
			}
			if m == ms[0] {
				positive(m, `etcd_network_peer_round_trip_time_seconds_count{To="`+remote+`"}`)
			}
		}
	}
	rtt := scrape(t, ms[0].curl)["etcd_network_peer_round_trip_time_seconds"]
	want := []string{"0.0001", "0.0002", "0.0004", "0.0008", "0.0016", "0.0032", "0.0064", "0.0128", "0.0256", "0.0512",
		"0.1024", "0.2048", "0.4096", "0.8192", "1.6384", "3.2768", "+Inf"}
	if rtt.typ != "histogram" || !slices.Equal(rtt.labels, []string{"To"}) || !slices.Equal(rtt.buckets, want) {
		t.Errorf("etcd_network_peer_round_trip_time_seconds: %s %v %v", rtt.typ, rtt.labels, rtt.buckets)
	}
}

// TestListenMetricsURLs: --listen-metrics-urls serve /metrics and /health,
// and nothing else of the client API.
func TestListenMetricsURLs(t *testing.T) {
	murl := testnet.FreeURL(t)
	_, s, _ := startMember(t, memberconfig.Config{ListenMetricsURLs: []string{murl}})
	select { // /health is true once the member has its leader
	case <-s.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the member is not ready within 20 s")
	}
	for path, want := range map[string]int{"/metrics": http.StatusOK, "/health": http.StatusOK, "/v3/kv/range": http.StatusNotFound, "/version": http.StatusNotFound} {
		resp, err := http.Get(murl + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s on the metrics URL: %s, want %d", path, resp.Status, want)
		}
	}
	if _, ok := scrape(t, murl)["etcd_server_has_leader"]; !ok {
		t.Error("no etcd_server_has_leader on the metrics URL")
	}
}

// TestListenMetricsURLsOverTLS: an https metrics URL is served with the
// client URLs' certificate.
func TestListenMetricsURLsOverTLS(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	murl := "https://" + testnet.FreeAddr(t)
	newMember(t, memberconfig.Config{ListenMetricsURLs: []string{murl}, ClientTLS: servertls.Files{
		CertFile: certs.ServerCert, KeyFile: certs.ServerKey, TrustedCAFile: certs.CAFile}})
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: certs.ClientConfig(t)}}
	defer c.CloseIdleConnections()
	if _, status, body := get(t, c, murl+"/metrics"); status != http.StatusOK || !strings.Contains(body, "\netcd_server_has_leader ") {
		t.Errorf("GET /metrics over TLS: %d %.200s", status, body)
	}
}

// TestDebugVars: the client URLs serve Go's runtime variables as JSON at
// /debug/vars, as etcd's do.
func TestDebugVars(t *testing.T) {
	curl, _, _ := startMember(t, memberconfig.Config{})
	_, status, body := get(t, http.DefaultClient, curl+"/debug/vars")
	var vars map[string]any
	if err := json.Unmarshal([]byte(body), &vars); status != http.StatusOK || err != nil || vars["memstats"] == nil {
		t.Errorf("GET /debug/vars: %d %v %.200s", status, err, body)
	}
}

// TestMetricsOfSnapshotTransfer: a follower that comes back after the
// leader compacted its log gets a snapshot; the leader counts it sent to
// the follower, the follower received from the leader, and both time it.
func TestMetricsOfSnapshotTransfer(t *testing.T) {
	var curls, purls, initial []string
	for i := 1; i <= 3; i++ {
		curls, purls = append(curls, testnet.FreeURL(t)), append(purls, testnet.FreeURL(t))
		initial = append(initial, fmt.Sprintf("m%d=%s", i, purls[i-1]))
	}
	ms := make([]*member, 3)
	for i := range ms {
		ms[i] = &member{t: t, curl: curls[i], cfg: memberconfig.Config{Name: fmt.Sprintf("m%d", i+1), DataDir: t.TempDir(),
			ListenClientURLs: curls[i : i+1], ListenPeerURLs: purls[i : i+1], InitialCluster: strings.Join(initial, ","),
			SnapshotCount: 20, SnapshotCatchUpEntries: 5}}
		ms[i].start()
		t.Cleanup(ms[i].stop)
	}
	for _, m := range ms {
		<-m.s.Ready()
	}
	leader := ms[0]
	for _, m := range ms {
		if m.s.ID() == m.s.Leader() {
			leader = m
		}
	}
	down := ms[0]
	if down == leader {
		down = ms[1]
	}
	downID := down.s.ID()
	down.stop()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{leader.curl}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 60 {
		if _, err := cli.Put(ctx, fmt.Sprintf("k%02d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	down.start()
	to, from := formatID(downID), formatID(leader.s.ID())
	for series, m := range map[string]*member{
		`etcd_network_snapshot_send_success{To="` + to + `"}`:                             leader,
		`etcd_network_snapshot_send_total_duration_seconds_count{To="` + to + `"}`:        leader,
		`etcd_network_snapshot_receive_success{From="` + from + `"}`:                      down,
		`etcd_network_snapshot_receive_total_duration_seconds_count{From="` + from + `"}`: down,
		`etcd_network_disconnected_peers_total{Local="` + from + `",Remote="` + to + `"}`: leader,
	} {
		waitFor(t, 20*time.Second, series, func() bool {
			fams, err := tryScrape(t, m.curl)
			if err != nil {
				// A scrape during the restart has once ended in an
				// EOF, not explained yet: shown, and polled again.
				t.Logf("scrape %s for %s: %v", m.curl, series, err)
				return false
			}
			v, _ := value(fams, series)
			return v > 0
		})
	}
}
