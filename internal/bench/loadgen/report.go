package loadgen

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Percentiles are the latency percentiles a summary reports.
var Percentiles = []float64{10, 25, 50, 75, 90, 95, 99, 99.9}

// histogramBuckets is the number of bars of the latency histogram.
const histogramBuckets = 10

// Summary is the digest of a Result, in seconds, ready to print or encode.
type Summary struct {
	Requests          int                 `json:"requests"`
	Failed            int                 `json:"failed"`
	ElapsedSeconds    float64             `json:"elapsed_seconds"`
	RequestsPerSecond float64             `json:"requests_per_second"`
	Latency           LatencySummary      `json:"latency_seconds"`
	Histogram         []HistogramBucket   `json:"histogram"`
	Errors            map[string]int      `json:"errors,omitempty"`
	percentiles       map[float64]float64 // the same as Latency.Percentiles, by number
}

// LatencySummary describes the latencies of the successful requests.
type LatencySummary struct {
	Fastest     float64            `json:"fastest"`
	Slowest     float64            `json:"slowest"`
	Average     float64            `json:"average"`
	Stddev      float64            `json:"stddev"`
	Percentiles map[string]float64 `json:"percentiles"` // "p50", "p99.9", ...
}

// HistogramBucket counts the latencies from the previous bucket's bound up
// to UpTo.
type HistogramBucket struct {
	UpTo  float64 `json:"up_to"`
	Count int     `json:"count"`
}

// Summarize computes the figures of r.
func (r *Result) Summarize() Summary {
	s := Summary{
		Requests:       len(r.Latencies) + r.Failed(),
		Failed:         r.Failed(),
		ElapsedSeconds: r.Elapsed.Seconds(),
		Errors:         maps.Clone(r.Errors),
		percentiles:    map[float64]float64{},
	}
	if len(s.Errors) == 0 {
		s.Errors = nil
	}
	lats := r.Latencies
	s.Latency.Percentiles = map[string]float64{}
	if len(lats) == 0 {
		return s
	}
	if r.Elapsed > 0 {
		s.RequestsPerSecond = float64(len(lats)) / r.Elapsed.Seconds()
	}
	var sum float64
	for _, l := range lats {
		sum += l.Seconds()
	}
	mean := sum / float64(len(lats))
	var sq float64
	for _, l := range lats {
		d := l.Seconds() - mean
		sq += d * d
	}
	s.Latency.Fastest = lats[0].Seconds()
	s.Latency.Slowest = lats[len(lats)-1].Seconds()
	s.Latency.Average = mean
	s.Latency.Stddev = math.Sqrt(sq / float64(len(lats)))
	for _, p := range Percentiles {
		v := Percentile(lats, p).Seconds()
		s.percentiles[p] = v
		s.Latency.Percentiles[percentileName(p)] = v
	}
	s.Histogram = histogram(lats)
	return s
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted
// latencies, by the nearest-rank method: the smallest latency that at
// least p percent of the requests did not exceed.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p*float64(len(sorted))/100 - 1e-9)) // p*n may land a hair above an integer
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// P returns a percentile of the summary, one of Percentiles.
func (s Summary) P(p float64) float64 { return s.percentiles[p] }

func percentileName(p float64) string {
	return "p" + strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", p), "0"), ".")
}

// histogram spreads sorted latencies over equal-width buckets between the
// fastest and the slowest.
func histogram(sorted []time.Duration) []HistogramBucket {
	lo, hi := sorted[0].Seconds(), sorted[len(sorted)-1].Seconds()
	width := (hi - lo) / histogramBuckets
	buckets := make([]HistogramBucket, histogramBuckets+1)
	for i := range buckets {
		buckets[i].UpTo = lo + width*float64(i)
	}
	buckets[histogramBuckets].UpTo = hi
	b := 0
	for _, l := range sorted {
		for b < histogramBuckets && l.Seconds() > buckets[b].UpTo {
			b++
		}
		buckets[b].Count++
	}
	return buckets
}

// WriteText prints the summary for people: totals, a histogram of the
// latencies and their percentiles, and the errors if any.
func (s Summary) WriteText(w io.Writer) {
	fmt.Fprintf(w, "\nSummary:\n")
	fmt.Fprintf(w, "  Total:\t%.4f secs.\n", s.ElapsedSeconds)
	fmt.Fprintf(w, "  Slowest:\t%.4f secs.\n", s.Latency.Slowest)
	fmt.Fprintf(w, "  Fastest:\t%.4f secs.\n", s.Latency.Fastest)
	fmt.Fprintf(w, "  Average:\t%.4f secs.\n", s.Latency.Average)
	fmt.Fprintf(w, "  Stddev:\t%.4f secs.\n", s.Latency.Stddev)
	fmt.Fprintf(w, "  Requests/sec:\t%.4f\n", s.RequestsPerSecond)
	if len(s.Histogram) > 0 {
		fmt.Fprintf(w, "\nResponse time histogram:\n")
		most := 0
		for _, b := range s.Histogram {
			most = max(most, b.Count)
		}
		const barWidth = 40
		for _, b := range s.Histogram {
			bar := 0
			if most > 0 {
				bar = b.Count * barWidth / most
			}
			fmt.Fprintf(w, "  %.4f [%d]\t|%s\n", b.UpTo, b.Count, strings.Repeat("∎", bar))
		}
		fmt.Fprintf(w, "\nLatency distribution:\n")
		for _, p := range Percentiles {
			fmt.Fprintf(w, "  %s%% in %.4f secs.\n", strings.TrimPrefix(percentileName(p), "p"), s.percentiles[p])
		}
	}
	if len(s.Errors) > 0 {
		fmt.Fprintf(w, "\nError distribution:\n")
		for _, msg := range slices.Sorted(maps.Keys(s.Errors)) {
			fmt.Fprintf(w, "  [%d]\t%s\n", s.Errors[msg], msg)
		}
	}
}
