package api

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/memberconfig"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestHealthEndpoints: /health, /livez and /readyz answer as etcd 3.7.3's
// (observed with the reference binary): on a healthy member, and on one
// that lost its leader, where /health and the linearizable read fail and
// a serializable read does not.
func TestHealthEndpoints(t *testing.T) {
	ms := startInProcess(t, 3, func(cfg *memberconfig.Config) {
		cfg.HeartbeatInterval, cfg.ElectionTimeout = 20*time.Millisecond, 200*time.Millisecond
	})
	m := ms[0]
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, c := range []struct {
		path string
		code int
		body string
	}{
		{"/health", 200, `{"health":"true","reason":""}` + "\n"},
		{"/health?serializable=true", 200, `{"health":"true","reason":""}` + "\n"},
		{"/livez", 200, "ok\n"},
		{"/livez?verbose", 200, "[+]serializable_read ok\nok\n"},
		{"/readyz", 200, "ok\n"},
		{"/readyz?verbose", 200, "[+]data_corruption ok\n[+]serializable_read ok\n[+]linearizable_read ok\n[+]non_learner ok\nok\n"},
		{"/readyz?verbose&exclude=data_corruption&exclude=non_learner", 200, "[+]serializable_read ok\n[+]linearizable_read ok\nok\n"},
		{"/readyz/linearizable_read", 200, "ok\n"},
	} {
		if _, code, body := get(t, hc, m.curl+c.path); code != c.code || body != c.body {
			t.Errorf("healthy %s: %d %q, want %d %q", c.path, code, body, c.code, c.body)
		}
	}
	ms[1].stop()
	ms[2].stop()
	waitFor(t, 10*time.Second, "the member has no leader", func() bool { return m.s.Leader() == 0 })
	for _, c := range []struct {
		path string
		code int
		body string
	}{
		{"/health", 503, `{"health":"false","reason":"RAFT NO LEADER"}` + "\n"},
		{"/livez", 200, "ok\n"},
		// etcd's answer too: the read waits for a leader until the request timeout.
		{"/readyz", 503, "[+]data_corruption ok\n[+]serializable_read ok\n[-]linearizable_read failed: etcdserver: request timed out\n[+]non_learner ok\nreadyz check failed\n"},
		{"/readyz?exclude=linearizable_read", 200, "ok\n"},
	} {
		if _, code, body := get(t, hc, m.curl+c.path); code != c.code || body != c.body {
			t.Errorf("leaderless %s: %d %q, want %d %q", c.path, code, body, c.code, c.body)
		}
	}
}

// TestReadWhenTheLeaderIsLostDuringIt: a linearizable read that was
// waiting when the member lost its leader fails with etcd's "leader
// changed", over gRPC (Unavailable, which clients retry elsewhere) and in
// /readyz (etcd's TestHTTPLivezReadyzHandler/network_partitioned asks for
// it), not with the "no leader" of a read that finds no leader at once.
// The member that reads is the leader: it leads on until it sees it has
// lost its quorum (a follower whose leader stopped would campaign at once).
func TestReadWhenTheLeaderIsLostDuringIt(t *testing.T) {
	all := startInProcess(t, 3, func(cfg *memberconfig.Config) {
		cfg.HeartbeatInterval, cfg.ElectionTimeout = 50*time.Millisecond, time.Second
	})
	var m *inProcessMember
	var ms []*inProcessMember // the leader first
	for _, x := range all {
		if x.s.Leader() == x.s.ID() {
			m = x
			ms = append([]*inProcessMember{x}, ms...)
		} else {
			ms = append(ms, x)
		}
	}
	if m == nil {
		t.Fatal("no member leads")
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	kv := pb.NewKVClient(m.dial(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("k")}); err != nil {
		t.Fatalf("healthy range: %v", err)
	}
	ms[1].stop()
	ms[2].stop()
	if m.s.Leader() == 0 {
		t.Fatal("the member lost its leader before the reads began")
	}
	rangeErr := make(chan error, 1)
	go func() {
		_, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("k")})
		rangeErr <- err
	}()
	want := "[-]linearizable_read failed: etcdserver: leader changed\nreadyz check failed\n"
	if _, code, body := get(t, hc, m.curl+"/readyz/linearizable_read"); code != 503 || body != want {
		t.Errorf("/readyz/linearizable_read: %d %q, want 503 %q", code, body, want)
	}
	if err := <-rangeErr; status.Code(err) != codes.Unavailable || !errors.Is(rpctypes.Error(err), rpctypes.ErrLeaderChanged) {
		t.Errorf("range: %v, want %v (Unavailable)", err, rpctypes.ErrLeaderChanged)
	}
}
