package metrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestSamples(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 3.2e+07
process_resident_memory_bytes_other 1
peer_since{Local="a",Remote="b"} 1.796177283071e+09
peer_since{Local="a",Remote="c"} 12
`)
	}))
	defer srv.Close()
	r := NewReader(srv.URL, nil, 5*time.Second)
	got, err := r.Samples(context.Background(), "process_resident_memory_bytes")
	if err != nil || len(got) != 1 || got[0].Value != 3.2e7 || len(got[0].Labels) != 0 {
		t.Errorf("process_resident_memory_bytes: %+v, %v", got, err)
	}
	got, err = r.Samples(context.Background(), "peer_since")
	if err != nil || len(got) != 2 || got[0].Labels["Remote"] != "b" || got[0].Labels["Local"] != "a" || got[0].Value != 1.796177283071e9 || got[1].Labels["Remote"] != "c" {
		t.Errorf("peer_since: %+v, %v", got, err)
	}
	if got, err := NewReader(srv.URL+"/nothing", nil, time.Second).Samples(context.Background(), "x"); err == nil {
		t.Errorf("a missing /metrics read as %+v", got)
	}
}
