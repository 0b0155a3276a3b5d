package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sextant-crawler/sextant/internal/control"
)

// controlCollector exports a node's control.Metrics (the operator's rules,
// issue 28) at scrape time.
type controlCollector struct {
	node string
	ctl  *control.Controller
}

var (
	mCtlChanges = desc("control_changes_total", "Operator rule changes applied (crawler ctl pause, resume, block, unblock, set).", "node")
	mCtlSeeded  = desc("control_seeded_urls_total", "URLs injected as seeds at run time (crawler ctl seed), by fate (accepted, rejected).", "node", "fate")
	mCtlRules   = desc("control_rules", "Operator rules in force, by kind (pause, block, override).", "node", "kind")
	mCtlPaused  = desc("control_paused_all", "1 while the whole crawl is paused on this node.", "node")
	mCtlHeld    = desc("control_held_urls", "URLs queued but not fetched because their host is paused or blocked, by rule kind (pause, block).", "node", "kind")
	mCtlDrain   = desc("control_draining", "1 once an operator asked this node to drain.", "node")
)

// Describe implements prometheus.Collector.
func (c controlCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mCtlChanges, mCtlSeeded, mCtlRules, mCtlPaused, mCtlHeld, mCtlDrain} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c controlCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.ctl.Metrics()
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	ch <- prometheus.MustNewConstMetric(mCtlChanges, prometheus.CounterValue, float64(m.Changes), c.node)
	ch <- prometheus.MustNewConstMetric(mCtlSeeded, prometheus.CounterValue, float64(m.Seeded), c.node, "accepted")
	ch <- prometheus.MustNewConstMetric(mCtlSeeded, prometheus.CounterValue, float64(m.SeedRejected), c.node, "rejected")
	ch <- prometheus.MustNewConstMetric(mCtlRules, prometheus.GaugeValue, float64(m.PauseRules), c.node, "pause")
	ch <- prometheus.MustNewConstMetric(mCtlRules, prometheus.GaugeValue, float64(m.BlockRules), c.node, "block")
	ch <- prometheus.MustNewConstMetric(mCtlRules, prometheus.GaugeValue, float64(m.Overrides), c.node, "override")
	ch <- prometheus.MustNewConstMetric(mCtlPaused, prometheus.GaugeValue, b(m.PausedAll), c.node)
	ch <- prometheus.MustNewConstMetric(mCtlHeld, prometheus.GaugeValue, float64(m.HeldPaused), c.node, "pause")
	ch <- prometheus.MustNewConstMetric(mCtlHeld, prometheus.GaugeValue, float64(m.HeldBlocked), c.node, "block")
	ch <- prometheus.MustNewConstMetric(mCtlDrain, prometheus.GaugeValue, b(m.Draining), c.node)
}
