package tcpproxy

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/testnet"
)

// refusedAddr is an address nothing listens on.
func refusedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startProxy serves p on a free port until the test ends.
func startProxy(t *testing.T, p *Proxy) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return l.Addr().String()
}

// roundTrip sends msg through the proxy at addr, half-closes, and returns
// the answer.
func roundTrip(t *testing.T, addr, msg string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte(msg))
	c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestProxyTakesEndpointsInTurn: connections go to the endpoints in turn,
// bytes unchanged both ways, and a half-close reaches the endpoint.
func TestProxyTakesEndpointsInTurn(t *testing.T) {
	a, b := testnet.EchoServer(t, "a:"), testnet.EchoServer(t, "b:")
	var log logBuffer
	addr := startProxy(t, &Proxy{Endpoints: []string{a, b}, RetryDelay: time.Minute, Log: slog.New(slog.NewTextHandler(&log, nil))})
	var got []string
	for i := 0; i < 4; i++ {
		got = append(got, roundTrip(t, addr, "hello"))
	}
	if want := "a:hello b:hello a:hello b:hello"; strings.Join(got, " ") != want {
		t.Errorf("answers %q, want %q", got, want)
	}
	if !strings.Contains(log.String(), "ready to proxy client requests") {
		t.Errorf("no ready line in the log:\n%s", log.String())
	}
}

// TestProxyLeavesOutARefusingEndpoint: an endpoint that refuses is left
// out for the retry delay (logged), then tried again; with no endpoint
// left, the client's connection is closed.
func TestProxyLeavesOutARefusingEndpoint(t *testing.T) {
	dead, live := refusedAddr(t), testnet.EchoServer(t, "live:")
	var log logBuffer
	p := &Proxy{Endpoints: []string{dead, live}, RetryDelay: time.Hour, Log: slog.New(slog.NewTextHandler(&log, nil))}
	addr := startProxy(t, p)
	for i := 0; i < 3; i++ {
		if got := roundTrip(t, addr, "x"); got != "live:x" {
			t.Fatalf("answer %d: %q", i, got)
		}
	}
	if n := strings.Count(log.String(), "deactivated endpoint"); n != 1 {
		t.Errorf("%d deactivations logged, want 1 (then left out):\n%s", n, log.String())
	}
	p.mu.Lock()
	p.inactive[dead] = time.Now() // the retry delay is over
	p.mu.Unlock()
	roundTrip(t, addr, "x")
	roundTrip(t, addr, "x")
	if !strings.Contains(log.String(), `msg="activated endpoint"`) || strings.Count(log.String(), "deactivated endpoint") != 2 {
		t.Errorf("the endpoint was not tried again after its delay:\n%s", log.String())
	}

	// The client sends nothing: a socket closed with unread bytes would
	// answer with a reset instead of the end of stream this checks for.
	none := startProxy(t, &Proxy{Endpoints: []string{refusedAddr(t)}, RetryDelay: time.Hour, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if got := roundTrip(t, none, ""); got != "" {
		t.Errorf("with no endpoint, the proxy answered %q", got)
	}
}
