package main

import (
	"math"
	"time"
)

// result is one run of the benchmark.
type result struct {
	opts                  options
	started               time.Time
	loadBefore, loadAfter string
	web, command          string
	samples               []sample
	wall                  float64 // s, crawl start to exit
	simwebCPU             float64
	check                 *checkResult
	crawlErr              string

	// From analyze.
	fetched      float64
	peakRSS      float64 // bytes
	peakHeap     float64
	slopeMBh     float64 // RSS slope over the last 90% of the wall time, MB per hour
	growth       float64 // that slope × that window ÷ the window's mean RSS
	firstRate    float64 // pages/s over the 10%–20% of the pages
	lastRate     float64 // pages/s over the last 10% of the pages
	meanRate     float64
	cpu          float64 // crawler CPU s
	final        sample  // the last sample
	rateMeasured bool
}

// Targets of issue 29 (part 2).
const (
	targetWall     = time.Hour
	targetPeakRSS  = 400e6 // bytes
	targetGrowth   = 0.10  // RSS may grow ≤ 10% over the last 90% of the run ("flat")
	targetRateKeep = 0.9
)

// analyze computes the run's figures from the samples.
func (r *result) analyze() {
	if len(r.samples) == 0 {
		return
	}
	r.final = r.samples[len(r.samples)-1]
	r.fetched = r.final.Fetched
	if r.check != nil && r.check.Fetches > 0 {
		r.fetched = float64(r.check.Fetches)
	}
	for _, s := range r.samples {
		r.peakRSS = math.Max(r.peakRSS, math.Max(s.PeakRSS, s.RSS))
		r.peakHeap = math.Max(r.peakHeap, s.Heap)
		r.cpu = math.Max(r.cpu, s.CPU)
		r.simwebCPU = math.Max(r.simwebCPU, s.SimwebCPU)
	}
	r.meanRate = ratio(r.fetched, r.wall)
	var xs, ys []float64
	for _, s := range r.samples {
		if s.Elapsed >= 0.1*r.wall {
			xs, ys = append(xs, s.Elapsed), append(ys, s.RSS)
		}
	}
	if slope, mean, ok := linearFit(xs, ys); ok {
		r.slopeMBh = slope * 3600 / 1e6
		r.growth = ratio(slope*0.9*r.wall, mean)
	}
	r.firstRate, r.lastRate, r.rateMeasured = decileRates(r.samples, r.final.Fetched, r.final.Elapsed)
}

// linearFit is the least-squares slope of ys over xs and the mean of ys.
func linearFit(xs, ys []float64) (slope, meanY float64, ok bool) {
	n := float64(len(xs))
	if len(xs) < 3 {
		return 0, 0, false
	}
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/n, sy/n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return 0, my, false
	}
	return sxy / sxx, my, true
}

// decileRates are the pages/s while the crawl fetched its second tenth of
// total pages (the first tenth is the warm-up: the frontier fills from 3
// seeds) and its last tenth, from the sampled (elapsed, fetched) curve.
func decileRates(samples []sample, total, end float64) (first, last float64, ok bool) {
	if total <= 0 || len(samples) < 4 {
		return 0, 0, false
	}
	at := func(pages float64) float64 { // first time the curve reaches pages
		prevT, prevF := 0.0, 0.0
		for _, s := range samples {
			if s.Fetched >= pages {
				if s.Fetched == prevF {
					return s.Elapsed
				}
				return prevT + (pages-prevF)/(s.Fetched-prevF)*(s.Elapsed-prevT)
			}
			prevT, prevF = s.Elapsed, s.Fetched
		}
		return end
	}
	t10, t20, t90 := at(0.1*total), at(0.2*total), at(0.9*total)
	if t20 <= t10 || end <= t90 {
		return 0, 0, false
	}
	return 0.1 * total / (t20 - t10), 0.1 * total / (end - t90), true
}

// target is one line of the targets table.
type target struct {
	name, measured, wanted, verdict string
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

func (r *result) targets() []target {
	finished := r.crawlErr == "" && r.check != nil
	var ts []target
	wall := target{"wall time of the crawl", (time.Duration(r.wall) * time.Second).String(), "≤ 1 h", verdict(r.wall <= targetWall.Seconds())}
	if !finished && r.wall <= targetWall.Seconds() {
		wall.verdict = "not measured (the crawl did not finish)"
	}
	ts = append(ts, wall)
	ts = append(ts, target{"peak RSS of the crawler", mb(r.peakRSS), "≤ 400 MB", verdict(r.peakRSS <= targetPeakRSS)})
	ts = append(ts, target{"RSS slope over the last 90% of the run", sprintf("%+.1f MB/h (%+.1f%% of the mean RSS over that window)", r.slopeMBh, 100*r.growth),
		"≈ 0 (≤ 10% growth)", verdict(r.growth <= targetGrowth)})
	rate := target{"pages/s, last 10% of pages ÷ second 10% (after warm-up)", sprintf("%.0f ÷ %.0f = %.2f", r.lastRate, r.firstRate, ratio(r.lastRate, r.firstRate)),
		"≥ 0.9", verdict(ratio(r.lastRate, r.firstRate) >= targetRateKeep)}
	if !r.rateMeasured {
		rate.measured, rate.verdict = "—", "not measured"
	}
	ts = append(ts, rate)
	eq := target{"fetched set = the oracle's (streamed sorted)", "—", "0 missing, 0 extra, 0 twice", "not measured"}
	if c := r.check; c != nil {
		eq.measured = c.summary()
		eq.verdict = verdict(c.Equal())
	}
	ts = append(ts, eq)
	if !finished {
		for i := range ts[1:] {
			if ts[i+1].verdict != "not measured" {
				ts[i+1].verdict += " (so far: the crawl did not finish)"
			}
		}
	}
	return ts
}
