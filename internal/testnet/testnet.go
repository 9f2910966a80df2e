// Package testnet hands out loopback ports for tests that start servers in
// other processes, which must be told their addresses before they bind them,
// and runs the small servers network tests talk to.
package testnet

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
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
	mu sync.Mutex
	// handed holds, for each port handed out, the lock file that reserves it
	// for this process: `go test ./...` runs packages in parallel processes,
	// and a member killed by a fault test leaves its port free until it is
	// restarted; another package's server must not take it meanwhile (the
	// restart would fail, and the test's clients would talk to the intruder).
	// The lock goes with the process.
	handed = map[int]*os.File{}
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
	return freePortIn(filepath.Join(os.TempDir(), "cairn-test-ports"), lowPort, highPort)
}

// freePortIn hands out a port in low-high that no process holds a lock on in
// lockDir and that nothing listens on.
func freePortIn(lockDir string, low, high int) (int, error) {
	mu.Lock()
	defer mu.Unlock()
	if err := os.MkdirAll(lockDir, 0o777); err != nil {
		return 0, fmt.Errorf("port locks: %w", err)
	}
	for range 1000 {
		port := low + rand.IntN(high-low+1)
		if handed[port] != nil {
			continue
		}
		lock, ok := reserve(lockDir, port)
		if !ok {
			continue // another test process holds it
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			lock.Close()
			continue // taken by someone else
		}
		l.Close()
		handed[port] = lock
		return port, nil
	}
	return 0, fmt.Errorf("no free port on 127.0.0.1 in %d-%d after 1000 tries", low, high)
}

// reserve takes port's lock in lockDir, or reports that another open file
// (of this process or another one) holds it.
func reserve(lockDir string, port int) (*os.File, bool) {
	f, err := os.OpenFile(filepath.Join(lockDir, fmt.Sprint(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
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
