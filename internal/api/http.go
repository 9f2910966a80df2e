package api

import (
	"expvar"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/cairnkv/cairn/internal/servertls"
)

func formatID(id uint64) string { return strconv.FormatUint(id, 16) }

// httpHandler serves health, metrics and the JSON API on the client port,
// and, on an https port, gRPC too (HTTP/2 requests of type
// application/grpc).
func (a *API) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", a.serveHealth) // health.go
	checksHandler(mux, "/livez", a.livezChecks())
	checksHandler(mux, "/readyz", a.readyzChecks())
	mux.HandleFunc("/version", a.serveVersion)
	mux.Handle("/v3/", a.refuseCertUsers(&a.gw))
	mux.Handle("/v3beta/", a.refuseCertUsers(&a.gw))
	mux.Handle("/metrics", a.metricsHandler)
	mux.Handle("/debug/vars", expvar.Handler()) // Go's runtime variables, as etcd serves them
	if a.s.Config().EnablePprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			a.grpc.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// metricsOnlyHandler serves the --listen-metrics-urls: /metrics and
// /health only, as etcd does.
func (a *API) metricsOnlyHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", a.serveHealth)
	mux.Handle("/metrics", a.metricsHandler)
	return mux
}

// serveMetricsURLs listens on every --listen-metrics-urls.
func (a *API) serveMetricsURLs() error {
	for _, u := range a.s.Config().ListenMetricsURLs {
		ln, secure, err := a.listen("metrics", u)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: a.metricsOnlyHandler(), ReadHeaderTimeout: 5 * time.Second, TLSConfig: a.metricsTLS.Clone(),
			ErrorLog: servertls.ErrorLog(a.log, "metrics")}
		a.metricsSrv = append(a.metricsSrv, srv)
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			if secure {
				srv.ServeTLS(ln, "", "")
			} else {
				srv.Serve(ln)
			}
		}()
	}
	return nil
}
