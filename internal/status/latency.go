package status

import "github.com/sextant-crawler/sextant/internal/histogram"

// Latency is one latency histogram's summary (milliseconds; zero without
// observations): the fetcher's fetch time, time to first byte, DNS and TLS
// handshake times.
type Latency struct {
	Name   string  `json:"name"` // e.g. "fetch", "ttfb", "dns", "tls"
	Count  uint64  `json:"count"`
	MeanMS float64 `json:"meanMs"`
	P50MS  float64 `json:"p50Ms"`
	P90MS  float64 `json:"p90Ms"`
	P99MS  float64 `json:"p99Ms"`
}

// LatencyOf summarises h: quantiles interpolated inside their bucket (as
// Prometheus's histogram_quantile), so they are as coarse as the buckets.
func LatencyOf(name string, h histogram.Snapshot) Latency {
	l := Latency{Name: name, Count: h.Count}
	if h.Count == 0 {
		return l // no NaN: JSON cannot carry it
	}
	l.MeanMS = 1000 * h.Sum / float64(h.Count)
	l.P50MS, l.P90MS, l.P99MS = 1000*h.Quantile(0.5), 1000*h.Quantile(0.9), 1000*h.Quantile(0.99)
	return l
}
