package listen

import (
	"net"
	"path/filepath"
	"testing"
)

// TestUnixSocketByPath: a unix URL names its socket by its host
// (unix://localhost:2379, a file in the working directory) or, as etcd
// also takes it, by its path (unix:///run/etcd.sock).
func TestUnixSocketByPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client.sock")
	u := "unix://" + path
	ln, secure, err := Options{}.URL(u)
	if err != nil || secure {
		t.Fatalf("listen on %s: %v (secure %v)", u, err, secure)
	}
	defer ln.Close()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	c.Close()
}
