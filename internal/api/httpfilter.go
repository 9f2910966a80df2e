package api

import (
	"context"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/peer"
)

// misdirectedText is the body etcd answers a request whose Host header
// --host-whitelist does not list.
const misdirectedText = `etcd received your request, but the Host header was unrecognized.

To fix this, choose one of the following options:
- Enable TLS, then any HTTPS request will be allowed.
- Add the hostname you want to use to the whitelist in settings.
  - e.g. etcd --host-whitelist "127.0.0.1"

This requirement has been added to help prevent "DNS Rebinding" attacks (CVE-2018-5702).
`

// filterHTTP applies --host-whitelist to plain-HTTP requests and --cors to
// every HTTP response, as etcd does: an empty list or "*" allows all. A
// CORS preflight (OPTIONS) is answered here. With --enable-grpc-gateway=false
// there is no /v3/ path.
func (a *API) filterHTTP(h http.Handler) http.Handler {
	hosts, cors, noGateway := a.s.Config().HostWhitelist, a.s.Config().CORS, a.s.Config().NoGRPCGateway
	allowAll := func(l []string) bool { return len(l) == 0 || slices.Contains(l, "*") }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if noGateway && strings.HasPrefix(r.URL.Path, "/v3/") {
			http.NotFound(w, r)
			return
		}
		if r.TLS == nil && !allowAll(hosts) {
			host, _, err := net.SplitHostPort(r.Host)
			if err != nil {
				host = r.Host
			}
			if !slices.Contains(hosts, host) {
				http.Error(w, misdirectedText, http.StatusMisdirectedRequest)
				return
			}
		}
		if r.ProtoMajor == 2 && r.Header.Get("Content-Type") == "application/grpc" {
			h.ServeHTTP(w, r)
			return
		}
		origin := "*"
		if !allowAll(cors) {
			origin = r.Header.Get("Origin")
			if !slices.Contains(cors, origin) {
				origin = ""
			}
		}
		if origin != "" {
			w.Header().Set("Access-Control-Allow-Methods", "POST, GET, OPTIONS, PUT, DELETE")
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Access-Control-Allow-Headers", "accept, content-type, authorization")
		}
		if r.Method == http.MethodOptions {
			return
		}
		h.ServeHTTP(w, r)
	})
}

// warnIfSlow logs a unary request begun at start that took longer than
// --warning-unary-request-duration.
func (a *API) warnIfSlow(ctx context.Context, method string, start time.Time) {
	if took := time.Since(start); took > a.s.Config().WarningUnaryRequestDuration {
		remote := ""
		if p, ok := peer.FromContext(ctx); ok {
			remote = p.Addr.String()
		}
		a.log.Warn("request stats", "start time", start, "time spent", took.String(), "remote", remote, "method", method,
			"expected-duration", a.s.Config().WarningUnaryRequestDuration.String())
	}
}

// keepAliveInterval is --grpc-keepalive-interval for gRPC, where 0 would
// mean its default (2h) rather than etcd's "no pings".
func keepAliveInterval(d time.Duration) time.Duration {
	if d == 0 {
		return math.MaxInt64
	}
	return d
}
