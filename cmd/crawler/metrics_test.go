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
