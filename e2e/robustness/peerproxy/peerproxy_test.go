package peerproxy

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/testnet"
)

// dialAs opens a connection through p as member id, with an HTTP-like head.
func dialAs(t *testing.T, p *Proxy, id string) (net.Conn, *bufio.Reader) {
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "POST /raft HTTP/1.1\r\nX-Server-From: "+id+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n') // the echoed request line
	if err != nil || !strings.HasPrefix(head, "POST") {
		t.Fatalf("echo of the head: %q, %v", head, err)
	}
	for line := head; line != "\r\n"; {
		if line, err = r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	return c, r
}

func roundTrip(c net.Conn, r *bufio.Reader, timeout time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

func TestProxyBlocksHealsAndDrops(t *testing.T) {
	n := New()
	t.Cleanup(n.Close)
	p, err := n.Listen("m2", testnet.EchoServer(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"m1", "m3"} { // isolation counts the links of every member
		if _, err := n.Listen(name, "127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
	}
	n.SetNames(map[string]string{"a1": "m1", "a3": "m3"})
	c1, r1 := dialAs(t, p, "A1")
	c3, r3 := dialAs(t, p, "a3")
	if got, err := roundTrip(c1, r1, 2*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("before the block: %q, %v", got, err)
	}

	n.Block("m1", "m2", true)
	if got, err := roundTrip(c1, r1, 300*time.Millisecond); err == nil {
		t.Fatalf("m1→m2 blocked, yet the echo came back: %q", got)
	}
	if got, err := roundTrip(c3, r3, 2*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("m3→m2 is not blocked: %q, %v", got, err)
	}

	// Healing lets the stalled bytes through, as TCP would after a partition.
	n.Heal()
	c1.SetDeadline(time.Now().Add(2 * time.Second))
	if got, err := r1.ReadString('\n'); err != nil || got != "ping\n" {
		t.Fatalf("after the heal, the stalled ping: %q, %v", got, err)
	}
	if got, err := roundTrip(c1, r1, 2*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("after the heal: %q, %v", got, err)
	}

	if closed, _ := n.Drop("m1"); closed != 1 {
		t.Fatalf("drop m1 closed %d connections, want 1", closed)
	}
	c1.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := r1.ReadString('\n'); err == nil {
		t.Fatal("the connection of m1 is still open after the drop")
	}
	if got, err := roundTrip(c3, r3, 2*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("m3's connection after dropping m1's: %q, %v", got, err)
	}
}
