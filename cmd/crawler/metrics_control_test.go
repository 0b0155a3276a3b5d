package main

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/control"
	"github.com/sextant-crawler/sextant/internal/crawl"
)

// TestControlMetrics: a node's registry with the control collector
// exports every sextant_control_* series and passes promtool.
func TestControlMetrics(t *testing.T) {
	coll := &statsCollector{node: func() crawl.Stats { return crawl.Stats{ID: "n1"} },
		split: func() hostsplit.Stats { return hostsplit.Stats{} }, done: func() bool { return false }}
	reg := newMetricsRegistry(coll)
	cc := controlCollector{node: "n1", ctl: control.New(control.Options{})}
	reg.MustRegister(cc)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "sextant_control_") {
			n += len(f.GetMetric())
		}
	}
	if n != 10 {
		t.Errorf("%d sextant_control_* series, want 10", n)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	checkPromtool(t, strings.TrimPrefix(srv.URL, "http://"))
}
