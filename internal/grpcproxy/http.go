package grpcproxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// healthTimeout bounds the read of a health check.
const healthTimeout = time.Second

// httpMux serves the HTTP paths of the proxy's port.
func (p *Proxy) httpMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", p.serveHealth)
	mux.HandleFunc("/proxy/health", p.serveProxyHealth)
	mux.Handle("/metrics", p.metrics.handler())
	if p.cfg.EnablePprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// serveHealth is /health: the cluster answers a read (of the key "health",
// linearizable) in time. A read refused for want of permission is an answer.
func (p *Proxy) serveHealth(w http.ResponseWriter, r *http.Request) {
	p.writeHealth(w, p.healthRead(r.Context(), []byte("health")))
}

// serveProxyHealth is /proxy/health: the same read, of the key "health"
// of the proxy's namespace.
func (p *Proxy) serveProxyHealth(w http.ResponseWriter, r *http.Request) {
	p.writeHealth(w, p.healthRead(r.Context(), p.ns.prefix.Key([]byte("health"))))
}

func (p *Proxy) healthRead(ctx context.Context, key []byte) error {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	_, err := p.client.KV.Range(ctx, &pb.RangeRequest{Key: key, Limit: 1, KeysOnly: true})
	if errors.Is(err, rpctypes.ErrPermissionDenied) || errors.Is(err, rpctypes.ErrUserEmpty) {
		return nil
	}
	return err
}

// writeHealth writes etcd's answer: {"health":"true","reason":""}, or
// "false" with the reason and status 503.
func (p *Proxy) writeHealth(w http.ResponseWriter, err error) {
	reason := ""
	if err != nil {
		reason = "GET ERROR:" + err.Error()
		p.log.Warn("/health error", "reason", reason, "status-code", http.StatusServiceUnavailable)
	}
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(map[string]string{"health": strconv.FormatBool(err == nil), "reason": reason})
}
