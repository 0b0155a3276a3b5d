package main

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/histogram"
)

// latencyStats is a node's Stats with fetches in every status class and
// observations in the four latency histograms.
func latencyStats() crawl.Stats {
	st := crawl.Stats{ID: "n1", FetchOK: 3, FetchRedirect: 2, FetchHTTPErr: 6, FetchErr: 4,
		FetchHTTP1xx: 1, FetchHTTP4xx: 3, FetchHTTP5xx: 1}
	obs := func(ds ...time.Duration) histogram.Snapshot {
		h := histogram.New(histogram.FetchBounds...)
		for _, d := range ds {
			h.Observe(d)
		}
		return h.Snapshot()
	}
	st.Fetcher.FetchSeconds = obs(30*time.Millisecond, 200*time.Millisecond, 3*time.Second)
	st.Fetcher.TTFBSeconds = obs(20*time.Millisecond, 150*time.Millisecond)
	st.Fetcher.DNSSeconds = obs(2 * time.Millisecond)
	st.Fetcher.TLSSeconds = obs()
	return st
}

// Fetches are exported by status class (with their outcome), and sum to
// what the outcome label alone said before.
func TestMetricsFetchClasses(t *testing.T) {
	exported(t, latencyStats(), map[string]float64{
		"sextant_fetches_total,class=1xx,outcome=http_error":   1,
		"sextant_fetches_total,class=2xx,outcome=ok":           3,
		"sextant_fetches_total,class=3xx,outcome=redirect":     2,
		"sextant_fetches_total,class=4xx,outcome=http_error":   3,
		"sextant_fetches_total,class=5xx,outcome=http_error":   1,
		"sextant_fetches_total,class=other,outcome=http_error": 1,
		"sextant_fetches_total,class=error,outcome=error":      4,
	})
}

// The fetcher's histograms are Prometheus histograms with cumulative
// buckets.
func TestMetricsLatencyHistograms(t *testing.T) {
	st := latencyStats()
	fams, err := newMetricsRegistry(&statsCollector{node: func() crawl.Stats { return st }}).Gather()
	if err != nil {
		t.Fatal(err)
	}
	hists := map[string]*dto.Histogram{}
	for _, f := range fams {
		if f.GetType() == dto.MetricType_HISTOGRAM && len(f.GetMetric()) == 1 {
			hists[f.GetName()] = f.GetMetric()[0].GetHistogram()
		}
	}
	for name, want := range map[string]uint64{"sextant_fetch_seconds": 3, "sextant_fetch_ttfb_seconds": 2,
		"sextant_dns_seconds": 1, "sextant_tls_handshake_seconds": 0} {
		h := hists[name]
		if h == nil {
			t.Errorf("%s: no histogram", name)
			continue
		}
		if h.GetSampleCount() != want {
			t.Errorf("%s: count %d, want %d", name, h.GetSampleCount(), want)
		}
	}
	// sextant_fetch_seconds: 30 ms, 200 ms, 3 s → le 0.05: 1, le 0.25: 2, le 5: 3.
	for _, b := range hists["sextant_fetch_seconds"].GetBucket() {
		want := map[float64]uint64{0.025: 0, 0.05: 1, 0.25: 2, 2.5: 2, 5: 3, 60: 3}
		if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("sextant_fetch_seconds le %v = %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
}

// The exposition with the histograms and classes passes promtool.
func TestMetricsLatencyPromtool(t *testing.T) {
	st := latencyStats()
	reg := newMetricsRegistry(&statsCollector{node: func() crawl.Stats { return st }})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	go srv.Serve(ln)
	defer srv.Close()
	checkPromtool(t, ln.Addr().String())
}
