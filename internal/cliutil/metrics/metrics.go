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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", r.url, resp.Status)
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
		return nil, err
	}
	return fams, nil
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
