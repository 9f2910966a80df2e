// Package metrics reads a member's Prometheus metrics at /metrics on its
// client URL, for the commands that report what only the metrics say:
// check datascale (the member's memory), endpoint status (since when a
// member has not been heard from), diagnose (disks, peers, quota).
package metrics

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Reader reads the metrics of one member.
type Reader struct {
	url  string
	http *http.Client
}

// NewReader reads the metrics on the client URL of endpoint (a URL, or
// host:port: https with tlsCfg, http without), each read bounded by
// timeout.
func NewReader(endpoint string, tlsCfg *tls.Config, timeout time.Duration) *Reader {
	base := endpoint
	if !strings.Contains(base, "://") {
		scheme := "http://"
		if tlsCfg != nil {
			scheme = "https://"
		}
		base = scheme + base
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsCfg
	return &Reader{url: strings.TrimSuffix(base, "/") + "/metrics", http: &http.Client{Transport: transport, Timeout: timeout}}
}

// Sample is one line of a family: its labels and its value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Samples returns the samples of the family name. Label values are read as
// the members write theirs (IDs, names): without commas or escaped quotes.
func (r *Reader) Samples(ctx context.Context, name string) ([]Sample, error) {
	fams, err := r.Families(ctx, name)
	return fams[name], err
}

// Families returns the samples of each family of names, read at once.
func (r *Reader) Families(ctx context.Context, names ...string) (map[string][]Sample, error) {
	s, err := r.Scrape(ctx, names...)
	return s.Families, err
}

// A Scrape is one read of the metrics: the samples of the families asked
// for, and what it tells of the member's clock.
type Scrape struct {
	Families map[string][]Sample
	// Clock bounds the member's clock minus this machine's: the member
	// wrote its Date header (whole seconds) between Sent and Received.
	Clock ClockOffset
}

// ClockOffset is an interval that holds a member's clock minus this
// machine's; the zero value knows nothing.
type ClockOffset struct {
	Low, High time.Duration
	Known     bool
}

// Intersect narrows o by another reading of the same clock (readings at
// different fractions of a second narrow it below the Date header's one
// second).
func (o ClockOffset) Intersect(p ClockOffset) ClockOffset {
	switch {
	case !p.Known:
		return o
	case !o.Known:
		return p
	}
	n := ClockOffset{Low: max(o.Low, p.Low), High: min(o.High, p.High), Known: true}
	if n.Low > n.High { // the clock moved between the readings: keep the last
		return p
	}
	return n
}

// Scrape reads the families of names at once, and the member's clock.
func (r *Reader) Scrape(ctx context.Context, names ...string) (Scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return Scrape{}, err
	}
	sent := time.Now()
	resp, err := r.http.Do(req)
	if err != nil {
		return Scrape{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Scrape{}, fmt.Errorf("GET %s: %s", r.url, resp.Status)
	}
	var clock ClockOffset
	if date, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
		// The member's time was in [date, date+1s) at some instant of
		// [sent, received] here.
		clock = ClockOffset{Low: date.Sub(time.Now()), High: date.Add(time.Second).Sub(sent), Known: true}
	}
	fams := map[string][]Sample{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		for _, name := range names {
			if s, ok := parseSample(sc.Text(), name); ok {
				fams[name] = append(fams[name], s)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Scrape{}, err
	}
	return Scrape{Families: fams, Clock: clock}, nil
}

// parseSample reads a line of the text format, `name value` or
// `name{label="value",...} value`, if it is one of the family name.
func parseSample(line, name string) (Sample, bool) {
	rest, ok := strings.CutPrefix(line, name)
	if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
		return Sample{}, false
	}
	s := Sample{Labels: map[string]string{}}
	if rest[0] == '{' {
		labels, after, ok := strings.Cut(rest[1:], "}")
		if !ok {
			return Sample{}, false
		}
		for pair := range strings.SplitSeq(labels, ",") {
			if k, v, ok := strings.Cut(pair, "="); ok {
				s.Labels[k] = strings.Trim(v, `"`)
			}
		}
		rest = after
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
	if err != nil {
		return Sample{}, false
	}
	s.Value = v
	return s, true
}
