package api

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/server"
	"github.com/cairnkv/cairn/internal/testnet"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// inProcessMember is a member and its API in the test's process.
type inProcessMember struct {
	s    *server.Server
	a    *API
	curl string
	once sync.Once
}

// stop stops the member (once; the test's cleanup stops it too).
func (m *inProcessMember) stop() {
	m.once.Do(func() {
		m.a.Stop()
		m.s.Stop()
	})
}

// startInProcess starts a cluster of n members on free loopback ports and
// waits until they are ready; configure, if not nil, adjusts each member's configuration.
func startInProcess(t testing.TB, n int, configure func(*memberconfig.Config)) []*inProcessMember {
	t.Helper()
	var names, curls, purls, initial []string
	for i := 1; i <= n; i++ {
		names = append(names, fmt.Sprintf("m%d", i))
		curls = append(curls, testnet.FreeURL(t))
		purls = append(purls, testnet.FreeURL(t))
		initial = append(initial, names[i-1]+"="+purls[i-1])
	}
	var ms []*inProcessMember
	for i := range n {
		cfg := memberconfig.Config{Name: names[i], DataDir: t.TempDir(), ListenClientURLs: []string{curls[i]}, ListenPeerURLs: []string{purls[i]},
			InitialCluster: strings.Join(initial, ",")}
		if configure != nil {
			configure(&cfg)
		}
		s, err := server.Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		m := &inProcessMember{s: s, a: New(s, nil), curl: curls[i]}
		t.Cleanup(m.stop)
		if err := m.a.Serve([]string{m.curl}); err != nil {
			m.s.Stop()
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	for _, m := range ms {
		select {
		case <-m.s.Ready():
		case <-time.After(30 * time.Second):
			t.Fatalf("member %x not ready within 30 s", m.s.ID())
		}
	}
	return ms
}

// dial opens a plain gRPC connection to m, closed when the test ends.
func (m *inProcessMember) dial(t *testing.T) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(m.curl, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
