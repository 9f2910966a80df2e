package metrics

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// TestScrapeReadsTheMembersClock serves a Date header ahead of this
// machine's clock by a random offset and checks that the interval read
// holds it, and that readings intersected still hold it.
func TestScrapeReadsTheMembersClock(t *testing.T) {
	offset := time.Duration(rand.Int64N(int64(20*time.Second))) - 10*time.Second
	t.Logf("offset %s", offset)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", time.Now().Add(offset).UTC().Format(http.TimeFormat))
		fmt.Fprintln(w, "x 1")
	}))
	defer srv.Close()
	r := NewReader(srv.URL, nil, 5*time.Second)
	var clock ClockOffset
	for i := range 5 {
		s, err := r.Scrape(context.Background(), "x")
		if err != nil || len(s.Families["x"]) != 1 {
			t.Fatalf("scrape: %+v, %v", s, err)
		}
		c := s.Clock
		if !c.Known || c.Low > offset || c.High < offset || c.High-c.Low > 2*time.Second {
			t.Fatalf("reading %d: [%s, %s] for an offset of %s", i, c.Low, c.High, offset)
		}
		clock = clock.Intersect(c)
		if clock.Low > offset || clock.High < offset {
			t.Fatalf("after %d readings: [%s, %s] for an offset of %s", i+1, clock.Low, clock.High, offset)
		}
		time.Sleep(time.Duration(rand.Int64N(int64(300 * time.Millisecond)))) // readings at other fractions of a second
	}
}
