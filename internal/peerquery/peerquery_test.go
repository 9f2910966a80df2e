package peerquery

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAskServe: a question reaches the leader's function and its answer,
// error included, comes back; a member of another cluster is refused.
func TestAskServe(t *testing.T) {
	const cluster = 0xc1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Serve(w, r, cluster, func(q Query) (Answer, error) {
			if q.ID == 7 && q.Keys {
				return Answer{TTL: 42}, nil
			}
			return Answer{}, errors.New("requested lease not found")
		})
	}))
	defer srv.Close()
	ctx := context.Background()
	ans, err := Ask(ctx, srv.Client(), srv.URL+PathLeaseTTL, cluster, Query{ID: 7, Keys: true})
	if err != nil || ans.TTL != 42 || ans.Error != "" {
		t.Errorf("answer %+v, %v; want TTL 42", ans, err)
	}
	ans, err = Ask(ctx, srv.Client(), srv.URL+PathLeaseTTL, cluster, Query{ID: 8})
	if err != nil || ans.Error != "requested lease not found" {
		t.Errorf("answer %+v, %v; want the leader's error", ans, err)
	}
	if ans, err := Ask(ctx, srv.Client(), srv.URL+PathLeaseTTL, cluster+1, Query{ID: 7, Keys: true}); err == nil {
		t.Errorf("a member of another cluster got the answer %+v", ans)
	}
}
