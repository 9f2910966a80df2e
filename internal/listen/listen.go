// Package listen opens the listeners of a member's client and peer URLs:
// http and https on TCP, and, as etcd allows, unix and unixs on a Unix
// socket whose path is the URL's host ("unix://localhost:2379" listens on
// the file localhost:2379 in the working directory).
package listen

import (
	"net"
	"net/url"
	"os"
)

// Secure reports whether a URL scheme is served over TLS.
func Secure(scheme string) bool { return scheme == "https" || scheme == "unixs" }

// Unix reports whether a URL scheme is a Unix socket's.
func Unix(scheme string) bool { return scheme == "unix" || scheme == "unixs" }

// URL listens on the address of the URL s, and says whether it is to be
// served over TLS. A stale socket file of an earlier run is removed first.
func URL(s string) (ln net.Listener, secure bool, err error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, false, err
	}
	if Unix(u.Scheme) {
		os.Remove(u.Host)
		ln, err = net.Listen("unix", u.Host)
	} else {
		ln, err = net.Listen("tcp", u.Host)
	}
	return ln, Secure(u.Scheme), err
}
