// Package testnet hands out loopback ports for tests that start servers in
// other processes, which must be told their addresses before they bind them,
// and runs the small servers network tests talk to.
package testnet

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
)

// Ports come from below Linux's ephemeral range (32768-60999 by default), so
// that the outgoing connections of the running tests never take one between
// the moment it is handed out and the moment its server binds it.
const (
	lowPort  = 20000
	highPort = 32767
)

var (
	mu     sync.Mutex
	handed = map[int]bool{} // never hand the same port out twice in a process
)

// FreePort returns a port on 127.0.0.1 that was free a moment ago and that
// this process has not handed out before.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// FreeAddr is FreePort as "127.0.0.1:port".
func FreeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

// FreeURL is FreePort as "http://127.0.0.1:port".
func FreeURL(t testing.TB) string {
	t.Helper()
	return "http://" + FreeAddr(t)
}

func freePort() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	for range 1000 {
		port := lowPort + rand.IntN(highPort-lowPort+1)
		if handed[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken by someone else
		}
		l.Close()
		handed[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free port on 127.0.0.1 in %d-%d after 1000 tries", lowPort, highPort)
}

// EchoServer listens on a loopback port until the test ends and, on each
// connection, writes greeting and then echoes every byte it reads back, up
// to the client's half-close; it returns the address.
func EchoServer(t testing.TB, greeting string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := io.WriteString(c, greeting); err == nil {
					io.Copy(c, c)
				}
			}()
		}
	}()
	return l.Addr().String()
}
