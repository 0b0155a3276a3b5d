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
