package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/server"
	"github.com/cairnkv/cairn/pkg/store"
)

// Health endpoints, as etcd 3.7.3 serves them:
//   - /health: JSON {"health":"true|false","reason":...}, 503 when false; any
//     raised alarm but those named by ?exclude=ALARM, no leader, or a read
//     that fails (linearizable; ?serializable=true reads locally) make it false.
//   - /livez and /readyz: "ok", or a check list with ?verbose; ?exclude=CHECK
//     skips a check, /livez/CHECK and /readyz/CHECK run one; 503 when a check
//     fails. /livez checks that the member can read; /readyz also that it
//     has no CORRUPT alarm, can read linearizably and is not a learner.

// healthReadTimeout bounds a health check's linearizable read.
const healthReadTimeout = 2 * time.Second

func (a *API) serveHealth(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	excluded := map[string]bool{}
	for _, v := range q["exclude"] {
		excluded[v] = true
	}
	healthy, reason := true, ""
	for _, al := range a.s.Alarms() {
		if !excluded[al.Alarm.String()] {
			healthy, reason = false, "ALARM "+al.Alarm.String()
		}
	}
	if healthy && a.s.Leader() == 0 {
		healthy, reason = false, "RAFT NO LEADER"
	}
	if healthy {
		serializable := q.Get("serializable") == "true"
		if err := a.healthRead(r.Context(), serializable); err != nil {
			healthy, reason = false, "RANGE ERROR:"+err.Error()
		}
	}
	if healthy {
		a.metrics.HealthSuccess.Inc()
	} else {
		a.metrics.HealthFailures.Inc()
	}
	w.Header().Set("Content-Type", "application/json")
	if !healthy {
		a.log.Warn("serving /health false", "reason", reason)
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(map[string]string{"health": strconv.FormatBool(healthy), "reason": reason})
}

// healthRead reads a key, locally or through the read index.
func (a *API) healthRead(ctx context.Context, serializable bool) error {
	if !serializable {
		rctx, cancel := context.WithTimeout(ctx, healthReadTimeout)
		defer cancel()
		if err := a.s.LinearizableReadNotify(rctx); err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				// etcd's words; it waits for its request timeout (7 s) to say them
				return server.ErrTimeout
			}
			return err
		}
	}
	rt := a.s.Store().Read()
	defer rt.End()
	_, err := rt.Range([]byte("health"), nil, store.RangeOptions{})
	return err
}

// healthCheck is one named check of /livez or /readyz.
type healthCheck struct {
	name  string
	check func(r *http.Request) error
}

func (a *API) livezChecks() []healthCheck {
	return []healthCheck{
		{"serializable_read", func(r *http.Request) error { return a.healthRead(r.Context(), true) }},
	}
}

func (a *API) readyzChecks() []healthCheck {
	return []healthCheck{
		{"data_corruption", func(*http.Request) error {
			for _, al := range a.s.Alarms() {
				if al.Alarm == pb.AlarmType_CORRUPT {
					return fmt.Errorf("alarm activated: %s", al.Alarm)
				}
			}
			return nil
		}},
		{"serializable_read", func(r *http.Request) error { return a.healthRead(r.Context(), true) }},
		{"linearizable_read", func(r *http.Request) error { return a.healthRead(r.Context(), false) }},
		{"non_learner", func(*http.Request) error {
			if m, ok := a.s.Member(a.s.ID()); ok && m.IsLearner {
				return fmt.Errorf("this member is a learner")
			}
			return nil
		}},
	}
}

// checksHandler serves a check list at path (/livez or /readyz) and each
// check at path/NAME.
func checksHandler(mux *http.ServeMux, path string, checks []healthCheck) {
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		excluded := map[string]bool{}
		for _, v := range r.URL.Query()["exclude"] {
			excluded[v] = true
		}
		var run []healthCheck
		for _, c := range checks {
			if !excluded[c.name] {
				run = append(run, c)
			}
		}
		_, verbose := r.URL.Query()["verbose"]
		serveChecks(w, r, strings.TrimPrefix(path, "/"), run, verbose)
	})
	for _, c := range checks {
		mux.HandleFunc(path+"/"+c.name, func(w http.ResponseWriter, r *http.Request) {
			serveChecks(w, r, strings.TrimPrefix(path, "/"), []healthCheck{c}, false)
		})
	}
}

func serveChecks(w http.ResponseWriter, r *http.Request, what string, checks []healthCheck, verbose bool) {
	var b strings.Builder
	failed := false
	for _, c := range checks {
		if err := c.check(r); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: %v\n", c.name, err) // the reason, as etcd gives it, verbose or not
			continue
		}
		fmt.Fprintf(&b, "[+]%s ok\n", c.name)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "%s%s check failed\n", b.String(), what)
		return
	}
	if verbose {
		w.Write([]byte(b.String()))
	}
	w.Write([]byte("ok\n"))
}
