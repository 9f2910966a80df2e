// Package listen opens the listeners of a member's client and peer URLs:
// http and https on TCP, and, as etcd allows, unix and unixs on a Unix
// socket whose path is the URL's host ("unix://localhost:2379" listens on
// the file localhost:2379 in the working directory, "unix:///run/etcd.sock"
// on /run/etcd.sock).
package listen

import (
	"context"
	"net"
	"net/url"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Secure reports whether a URL scheme is served over TLS.
func Secure(scheme string) bool { return scheme == "https" || scheme == "unixs" }

// Unix reports whether a URL scheme is a Unix socket's.
func Unix(scheme string) bool { return scheme == "unix" || scheme == "unixs" }

// socketPath is the file of a unix or unixs URL: its host, as etcd has it
// ("unix://localhost:2379" is the file localhost:2379), or its path
// ("unix:///run/etcd.sock").
func socketPath(u *url.URL) string { return u.Host + u.Path }

// Options are the socket options of the TCP listeners (etcd's
// --socket-reuse-port and --socket-reuse-address).
type Options struct {
	// ReusePort sets SO_REUSEPORT: several processes may listen on the port.
	ReusePort bool
	// ReuseAddress sets SO_REUSEADDR: the port may be bound while an earlier
	// socket on it is in TIME_WAIT. (Go sets it on every listener already.)
	ReuseAddress bool
}

// URL listens on the address of the URL s, and says whether it is to be
// served over TLS. A stale socket file of an earlier run is removed first.
func (o Options) URL(s string) (ln net.Listener, secure bool, err error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, false, err
	}
	lc := net.ListenConfig{Control: o.control}
	if Unix(u.Scheme) {
		os.Remove(socketPath(u))
		ln, err = lc.Listen(context.Background(), "unix", socketPath(u))
	} else {
		ln, err = lc.Listen(context.Background(), "tcp", u.Host)
	}
	return ln, Secure(u.Scheme), err
}

func (o Options) control(network, _ string, c syscall.RawConn) error {
	if network == "unix" || (!o.ReusePort && !o.ReuseAddress) {
		return nil
	}
	var serr error
	err := c.Control(func(fd uintptr) {
		if o.ReuseAddress {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
		}
		if serr == nil && o.ReusePort {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}
	})
	if err != nil {
		return err
	}
	return serr
}
