package main

import (
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

// Host-affine dispatch's steals and the workers' wait in the frontier are
// exported.
func TestMetricsDispatch(t *testing.T) {
	st := crawl.Stats{ID: "n1"}
	st.Frontier.Steals, st.Frontier.NextWait = 6, 2500*time.Millisecond
	exported(t, st, map[string]float64{
		"sextant_frontier_steals_total":     6,
		"sextant_worker_wait_seconds_total": 2.5,
	})
}
