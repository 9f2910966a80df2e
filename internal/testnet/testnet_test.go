package testnet

import (
	"net"
	"testing"
)

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
