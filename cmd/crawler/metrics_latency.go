package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sextant-crawler/sextant/fetcher"
)

// The fetcher's latency histograms (plain bucket counts in fetcher.Stats)
// as Prometheus histograms.
var (
	mFetchHist = desc("fetch_seconds", "Page fetch time, request to end of body, of every fetch that reached the network (failures included, cancellations not).", "node")
	mTTFBHist  = desc("fetch_ttfb_seconds", "Page fetch time to the response's first byte (connection set-up included).", "node")
	mDNSHist   = desc("dns_seconds", "Time of each DNS query the fetcher made (cache misses; robots.txt included).", "node")
	mTLSHist   = desc("tls_handshake_seconds", "Time of each completed TLS handshake with a web server (robots.txt included).", "node")
)

func collectLatencies(ch chan<- prometheus.Metric, node string, fs fetcher.Stats) {
	for _, h := range []struct {
		d *prometheus.Desc
		s fetcher.Histogram
	}{{mFetchHist, fs.FetchSeconds}, {mTTFBHist, fs.TTFBSeconds}, {mDNSHist, fs.DNSSeconds}, {mTLSHist, fs.TLSSeconds}} {
		if h.s.Bounds == nil {
			continue // a Stats not from a Fetcher (tests)
		}
		ch <- prometheus.MustNewConstHistogram(h.d, h.s.Count, h.s.Sum, h.s.Cumulative(), node)
	}
}
