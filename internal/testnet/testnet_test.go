package testnet

import (
	"net"
	"testing"
)

// A port another test process holds (a member killed by a fault, down until
// its restart) is never handed out.
func TestFreePortSkipsPortsOtherProcessesHold(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	low := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// Another open file description of the lock stands for another process.
	for port := low; port < low+3; port++ {
		lock, ok := reserve(dir, port)
		if !ok {
			t.Fatalf("port %d: lock not taken", port)
		}
		defer lock.Close()
	}
	for range 20 {
		port, err := freePortIn(dir, low, low+3)
		if err == nil && port != low+3 {
			t.Fatalf("port %d handed out while another process holds it", port)
		}
		if err == nil {
			return
		}
	}
	t.Fatalf("port %d never handed out", low+3)
}

func TestFreePortIsNeverRepeatedAndBindable(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		port := FreePort(t)
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
		if port < lowPort || port > highPort {
			t.Fatalf("port %d outside %d-%d", port, lowPort, highPort)
		}
	}
	addr := FreeAddr(t)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	l.Close()
}
