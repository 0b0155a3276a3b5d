package main

import (
	"runtime"
	"testing"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

// The node's refused private addresses are exported as a counter.
func TestMetricsPrivateRefused(t *testing.T) {
	reg := newMetricsRegistry(&statsCollector{node: func() crawl.Stats { return crawl.Stats{ID: "n1", PrivateRefused: 3} }})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "sextant_private_address_refused_total" {
			if m := f.GetMetric(); len(m) != 1 || m[0].GetCounter().GetValue() != 3 || m[0].GetLabel()[0].GetValue() != "n1" {
				t.Fatalf("got %v", m)
			}
			return
		}
	}
	t.Fatal("sextant_private_address_refused_total not exported")
}

// exported gathers the metrics of one node's stats, keyed
// "name,label=value,…" (labels other than node, in export order), and
// checks that every key of want is exported with its value.
func exported(t *testing.T, st crawl.Stats, want map[string]float64) {
	t.Helper()
	reg := newMetricsRegistry(&statsCollector{node: func() crawl.Stats { return st }})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				if l.GetName() != "node" {
					key += "," + l.GetName() + "=" + l.GetValue()
				}
			}
			got[key] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	for key, w := range want {
		if v, ok := got[key]; !ok || v != w {
			t.Errorf("%s = %v (exported %v), want %v", key, v, ok, w)
		}
	}
}

// The fetcher's TLS/DNS failures by kind, handshakes by resumption and
// HTTP/2 responses are exported.
func TestMetricsNet(t *testing.T) {
	st := crawl.Stats{ID: "n1"}
	st.Fetcher.TLSUnknownAuthority, st.Fetcher.DNSNotFound = 2, 5
	st.Fetcher.TLSHandshakes, st.Fetcher.TLSResumed, st.Fetcher.HTTP2 = 7, 3, 11
	st.Fetcher.ConnsOpen = 13
	exported(t, st, map[string]float64{
		"sextant_fetch_net_failures_total,kind=unknown_authority": 2,
		"sextant_fetch_net_failures_total,kind=dns_not_found":     5,
		"sextant_fetch_net_failures_total,kind=expired":           0,
		"sextant_tls_handshakes_total,resumed=false":              4,
		"sextant_tls_handshakes_total,resumed=true":               3,
		"sextant_http2_responses_total":                           11,
		"sextant_fetch_connections_open":                          13,
	})
}

// Pages with robots directives and links not followed are exported.
func TestMetricsRobotsDirectives(t *testing.T) {
	exported(t, crawl.Stats{ID: "n1", PagesNoFollow: 3, PagesNoIndex: 2, LinksNoFollow: 9}, map[string]float64{
		"sextant_robots_directive_pages_total,directive=nofollow": 3,
		"sextant_robots_directive_pages_total,directive=noindex":  2,
		"sextant_links_total,kind=nofollow":                       9,
	})
}

// Sitemap fetches and entries by fate are exported.
func TestMetricsSitemaps(t *testing.T) {
	exported(t, crawl.Stats{ID: "n1", Sitemap: crawl.SitemapStats{Fetches: 4, Found: 9, OverLimit: 2}}, map[string]float64{
		"sextant_sitemap_fetches_total":                      4,
		"sextant_sitemap_urls_total,fate=found":              9,
		"sextant_sitemap_urls_total,fate=dropped_over_limit": 2,
		"sextant_sitemap_urls_total,fate=admitted":           0,
	})
}

// sextant_build_info carries the version set with -X (as the image build
// does) and the Go version.
func TestMetricsBuildInfo(t *testing.T) {
	defer func(v, r string) { version, revision = v, r }(version, revision)
	version, revision = "v9.8.7", "abc123"
	fams, err := newMetricsRegistry(&statsCollector{node: func() crawl.Stats { return crawl.Stats{ID: "n1"} }}).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "sextant_build_info" {
			continue
		}
		labels := map[string]string{}
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["version"] != "v9.8.7" || labels["revision"] != "abc123" || labels["goversion"] != runtime.Version() || f.GetMetric()[0].GetGauge().GetValue() != 1 {
			t.Fatalf("sextant_build_info %v = %v", labels, f.GetMetric()[0].GetGauge().GetValue())
		}
		return
	}
	t.Fatal("sextant_build_info not exported")
}
