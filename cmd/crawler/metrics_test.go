package main

import (
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

// The fetcher's TLS/DNS failures by kind, handshakes by resumption and
// HTTP/2 responses are exported.
func TestMetricsNet(t *testing.T) {
	st := crawl.Stats{ID: "n1"}
	st.Fetcher.TLSUnknownAuthority, st.Fetcher.DNSNotFound = 2, 5
	st.Fetcher.TLSHandshakes, st.Fetcher.TLSResumed, st.Fetcher.HTTP2 = 7, 3, 11
	st.Fetcher.ConnsOpen = 13
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
	for key, want := range map[string]float64{
		"sextant_fetch_net_failures_total,kind=unknown_authority": 2,
		"sextant_fetch_net_failures_total,kind=dns_not_found":     5,
		"sextant_fetch_net_failures_total,kind=expired":           0,
		"sextant_tls_handshakes_total,resumed=false":              4,
		"sextant_tls_handshakes_total,resumed=true":               3,
		"sextant_http2_responses_total":                           11,
		"sextant_fetch_connections_open":                          13,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (exported %v), want %v", key, v, ok, want)
		}
	}
}

// Pages with robots directives and links not followed are exported.
func TestMetricsRobotsDirectives(t *testing.T) {
	reg := newMetricsRegistry(&statsCollector{node: func() crawl.Stats {
		return crawl.Stats{ID: "n1", PagesNoFollow: 3, PagesNoIndex: 2, LinksNoFollow: 9}
	}})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "directive" || l.GetName() == "kind" && l.GetValue() == "nofollow" {
					got[f.GetName()+"/"+l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	want := map[string]float64{"sextant_robots_directive_pages_total/nofollow": 3, "sextant_robots_directive_pages_total/noindex": 2,
		"sextant_links_total/nofollow": 9}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

// Sitemap fetches and entries by fate are exported.
func TestMetricsSitemaps(t *testing.T) {
	reg := newMetricsRegistry(&statsCollector{node: func() crawl.Stats {
		return crawl.Stats{ID: "n1", Sitemap: crawl.SitemapStats{Fetches: 4, Found: 9, OverLimit: 2}}
	}})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				if l.GetName() == "fate" {
					key += "/" + l.GetValue()
				}
			}
			got[key] = m.GetCounter().GetValue()
		}
	}
	for k, v := range map[string]float64{"sextant_sitemap_fetches_total": 4, "sextant_sitemap_urls_total/found": 9,
		"sextant_sitemap_urls_total/dropped_over_limit": 2, "sextant_sitemap_urls_total/admitted": 0} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (exported %v), want %v", k, g, ok, v)
		}
	}
}
