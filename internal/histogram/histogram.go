// Package histogram is a plain bucketed histogram of durations: atomic
// counters an engine updates on its hot path without locks or allocations,
// and snapshots a program turns into Prometheus histograms (only
// cmd/crawler imports Prometheus) or quantiles for a status page.
package histogram

import (
	"math"
	"slices"
	"sync/atomic"
	"time"
)

// Histogram counts observed durations into buckets with fixed upper bounds
// (in seconds, inclusive, as Prometheus's "le"), plus an overflow bucket.
// Safe for concurrent use; the zero value is unusable: use New.
type Histogram struct {
	bounds []float64
	counts []atomic.Uint64 // len(bounds)+1: the last is +Inf
	sum    atomic.Int64    // nanoseconds
}

// New returns a Histogram with the given upper bounds in seconds, which
// must be strictly increasing.
func New(bounds ...float64) *Histogram {
	if !slices.IsSorted(bounds) || len(slices.Compact(slices.Clone(bounds))) != len(bounds) {
		panic("histogram: bounds not strictly increasing")
	}
	return &Histogram{bounds: slices.Clone(bounds), counts: make([]atomic.Uint64, len(bounds)+1)}
}

// Observe counts one duration (negative ones as 0).
func (h *Histogram) Observe(d time.Duration) {
	d = max(d, 0)
	s := d.Seconds()
	i, _ := slices.BinarySearch(h.bounds, s) // first bound ≥ s
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// Snapshot is a histogram's state at one moment: plain data.
type Snapshot struct {
	Bounds []float64 `json:"bounds"` // upper bounds in seconds
	// Counts holds one count per bucket (not cumulative): Counts[i] for
	// (Bounds[i-1], Bounds[i]], and a last one above every bound.
	Counts []uint64 `json:"counts"`
	Count  uint64   `json:"count"` // the sum of Counts
	Sum    float64  `json:"sum"`   // seconds
}

// Snapshot reads the counters. Concurrent observations may land in the
// buckets and not yet in Sum (or the reverse): Count is always the sum of
// Counts.
func (h *Histogram) Snapshot() Snapshot {
	if h == nil {
		return Snapshot{}
	}
	s := Snapshot{Bounds: h.bounds, Counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
		s.Count += s.Counts[i]
	}
	s.Sum = time.Duration(h.sum.Load()).Seconds()
	return s
}

// Cumulative returns, for each bound, the number of observations at or
// below it: the form Prometheus's const histograms take.
func (s Snapshot) Cumulative() map[float64]uint64 {
	m := make(map[float64]uint64, len(s.Bounds))
	var c uint64
	for i, b := range s.Bounds {
		c += s.Counts[i]
		m[b] = c
	}
	return m
}

// Quantile estimates the q-quantile (0 < q ≤ 1) in seconds by linear
// interpolation inside the bucket holding it, as Prometheus's
// histogram_quantile does; NaN without observations, and the highest bound
// when the quantile lies in the overflow bucket.
func (s Snapshot) Quantile(q float64) float64 {
	if s.Count == 0 || len(s.Bounds) == 0 {
		return math.NaN()
	}
	rank := q * float64(s.Count)
	var c float64
	for i, n := range s.Counts {
		if i == len(s.Bounds) {
			break
		}
		if c+float64(n) >= rank && n > 0 {
			lo := 0.0
			if i > 0 {
				lo = s.Bounds[i-1]
			}
			return lo + (s.Bounds[i]-lo)*(rank-c)/float64(n)
		}
		c += float64(n)
	}
	return s.Bounds[len(s.Bounds)-1]
}

// Latency bounds (seconds) shared by the fetcher's histograms: from 1 ms
// (a loopback or cached answer) to a minute (FetchTimeout's order).
var (
	// FetchBounds suit whole fetches and times to first byte.
	FetchBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	// NetBounds suit DNS lookups and TLS handshakes.
	NetBounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
)
