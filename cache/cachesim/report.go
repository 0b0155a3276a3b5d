package cachesim

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
)

// WriteCSV writes results as CSV with a header row: algorithm, k, requests,
// misses, miss_rate, miss_rate_rel_min (empty when MIN was not simulated).
func WriteCSV(w io.Writer, results []Result) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"algorithm", "k", "requests", "misses", "miss_rate", "miss_rate_rel_min"})
	for _, r := range results {
		rel := ""
		if !math.IsNaN(r.RelMin) {
			rel = strconv.FormatFloat(r.RelMin, 'f', 6, 64)
		}
		_ = cw.Write([]string{r.Algo, strconv.Itoa(r.K), strconv.FormatUint(r.Requests, 10),
			strconv.FormatUint(r.Misses, 10), strconv.FormatFloat(r.MissRate, 'f', 6, 64), rel})
	}
	cw.Flush()
	return cw.Error()
}

// TargetMissRate is the caching study's target: a miss rate below 20%.
const TargetMissRate = 0.20

// Recommendation is the operator's answer for one algorithm's curve.
type Recommendation struct {
	Algo    string
	Workers int
	// Floor is the lowest miss rate on the curve; KFloor the smallest size
	// whose miss rate is within one percentage point of it, and
	// KFloorPerWorker that size split over Workers (rounded up).
	Floor           float64
	KFloor          int
	KFloorPerWorker int
	// KTarget is the smallest size whose miss rate is ≤ Target, 0 if none
	// reaches it (TargetReached false).
	Target           float64
	TargetReached    bool
	KTarget          int
	KTargetPerWorker int
}

// Recommend reads algo's curve out of results. workers < 1 counts as 1.
// It reports false if results hold no point of algo.
func Recommend(results []Result, algo string, workers int, target float64) (Recommendation, bool) {
	if workers < 1 {
		workers = 1
	}
	rec := Recommendation{Algo: algo, Workers: workers, Target: target, Floor: math.Inf(1)}
	var pts []Result
	for _, r := range results {
		if r.Algo == algo {
			pts = append(pts, r)
			rec.Floor = math.Min(rec.Floor, r.MissRate)
		}
	}
	if len(pts) == 0 {
		return rec, false
	}
	per := func(k int) int { return (k + workers - 1) / workers }
	rec.KFloor = -1
	for _, r := range pts {
		if r.MissRate <= rec.Floor+0.01 && (rec.KFloor < 0 || r.K < rec.KFloor) {
			rec.KFloor = r.K
		}
		if r.MissRate <= target && (!rec.TargetReached || r.K < rec.KTarget) {
			rec.TargetReached, rec.KTarget = true, r.K
		}
	}
	rec.KFloorPerWorker = per(rec.KFloor)
	if rec.TargetReached {
		rec.KTargetPerWorker = per(rec.KTarget)
	}
	return rec, true
}

// String is the recommendation as one line for an operator.
func (r Recommendation) String() string {
	s := fmt.Sprintf("%-6s floor %.2f%%: k=%d total (%d per worker × %d) is within 1 point of it",
		r.Algo, 100*r.Floor, r.KFloor, r.KFloorPerWorker, r.Workers)
	if r.TargetReached {
		return s + fmt.Sprintf("; k=%d (%d per worker) reaches the %.0f%% target", r.KTarget, r.KTargetPerWorker, 100*r.Target)
	}
	return s + fmt.Sprintf("; no size reaches the %.0f%% target", 100*r.Target)
}
