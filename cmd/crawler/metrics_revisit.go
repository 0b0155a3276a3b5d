package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

// Continuous crawling's metrics (crawl.Stats.Revisit); zero when --revisit
// is off. 304s are sextant_fetches_total{outcome="not_modified"}.
var (
	mRevisits         = desc("revisits_total", "Revisits by kind: queued (URLs due again, queued), changed and unchanged (fetches of known URLs that found the page changed or not; a 304 is unchanged), forgotten (schedules dropped: host now another node's).", "node", "kind")
	mRevisitScheduled = desc("revisit_scheduled_urls", "URLs with a revisit schedule (waiting, queued or being fetched).", "node")
)

func revisitDescs() []*prometheus.Desc { return []*prometheus.Desc{mRevisits, mRevisitScheduled} }

func collectRevisit(st crawl.Stats, counter, gauge func(d *prometheus.Desc, v float64, labels ...string)) {
	r := st.Revisit
	counter(mFetches, float64(r.NotModified), "not_modified", "3xx")
	counter(mRevisits, float64(r.Queued), "queued")
	counter(mRevisits, float64(r.Changed), "changed")
	counter(mRevisits, float64(r.Unchanged), "unchanged")
	counter(mRevisits, float64(r.Forgotten), "forgotten")
	gauge(mRevisitScheduled, float64(r.Scheduled))
}
