package report

import (
	"fmt"
	"time"
)

// DispatchStats say how URLs met workers (issue 30): the frontier's
// dispatch mode, the steals of host-affine dispatch, and the workers' idle
// time — the throughput cost of binding hosts to workers.
type DispatchStats struct {
	Mode   string `json:"mode"` // any or host-affine
	Steals uint64 `json:"steals"`
	// WaitSeconds is the time workers spent waiting for a URL, summed
	// over the workers of every node; IdleShare divides it by workers ×
	// elapsed time.
	WaitSeconds float64 `json:"worker_wait_seconds"`
	IdleShare   float64 `json:"worker_idle_share"`
	workerSecs  float64
}

func (d *DispatchStats) add(x Input, elapsed time.Duration) {
	d.Mode = x.Cache.Dispatch
	if d.Mode == "" {
		d.Mode = "any"
	}
	d.Steals += x.Stats.Frontier.Steals
	d.WaitSeconds += x.Stats.Frontier.NextWait.Seconds()
	d.workerSecs += float64(x.Cache.Workers) * elapsed.Seconds()
	d.IdleShare = ratioF(d.WaitSeconds, d.workerSecs)
}

func ratioF(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// text is the report's dispatch line.
func (d DispatchStats) text() string {
	return fmt.Sprintf("dispatch        %s: %d steals; workers waited %.0f s for URLs (%.1f%% of their time)",
		d.Mode, d.Steals, d.WaitSeconds, 100*d.IdleShare)
}
