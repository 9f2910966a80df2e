package api

import (
	"context"
	"crypto/tls"
	"net/http"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// With --client-cert-auth and authentication enabled, a request without a
// token runs as the user named by the common name of its verified client
// certificate, as in etcd.

// certUser is the common name of the call's verified client certificate,
// or "" when there is none or --client-cert-auth is off.
func (a *API) certUser(ctx context.Context) string {
	if !a.certUsers {
		return ""
	}
	p, ok := peer.FromContext(ctx)
	if !ok {
		return ""
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return ""
	}
	return commonName(&info.State)
}

func commonName(state *tls.ConnectionState) string {
	if len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return ""
	}
	return state.VerifiedChains[0][0].Subject.CommonName
}

// errGatewayCertUser is etcd's answer to a JSON request with a client
// certificate while authentication is on: the gateway cannot pass the
// certificate on, so its common name would silently not count.
const errGatewayCertUser = "CommonName of client sending a request against gateway will be ignored and not used as expected"

// refuseCertUsers answers JSON requests as etcd does when their client
// certificate names a user that the gateway cannot pass on.
func (a *API) refuseCertUsers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && a.certUsers && a.s.AuthStore().Enabled() && commonName(r.TLS) != "" {
			http.Error(w, errGatewayCertUser, http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
