package mrc

import (
	"fmt"
	"math"
)

// Target is the miss ratio the caching study aims for (Broder, Najork &
// Wiener, WWW 2003): 20%.
const Target = 0.20

// Advice turns a curve into sizes for the operator.
//
// The curve describes ONE cache fed the observed stream. When the stream is
// the union of Workers per-worker caches that partition it by fingerprint
// (as the host splitter's per-peer caches do), it behaves like one cache of
// CurrentPerWorker·Workers entries, so the sizes below are totals and the
// *PerWorker fields split them (rounded up).
type Advice struct {
	Workers          int     `json:"workers"`
	CurrentK         int     `json:"currentK"` // CurrentPerWorker·Workers
	CurrentPerWorker int     `json:"currentPerWorker"`
	CurrentMiss      float64 `json:"currentMiss"` // interpolated at CurrentK
	// KneeK is the size at the knee of the curve: the point farthest below
	// the chord from the first to the last point, on a log₂ k axis.
	KneeK           int     `json:"kneeK"`
	KneePerWorker   int     `json:"kneePerWorker"`
	KneeMiss        float64 `json:"kneeMiss"`
	KneeSavedPerSec float64 `json:"kneeSavedPerSec"`
	// K20 is the smallest curve size with miss ratio ≤ Target; 0 if none
	// (Reached20 false).
	Reached20      bool    `json:"reached20"`
	K20            int     `json:"k20"`
	K20PerWorker   int     `json:"k20PerWorker"`
	K20SavedPerSec float64 `json:"k20SavedPerSec"`
	// RequestsPerSec is the observed stream's rate; the current cache sends
	// CurrentMiss·RequestsPerSec URLs/s onwards (across machines for a
	// per-peer cache). *SavedPerSec is how many fewer URLs/s each size
	// would send (negative: a smaller size costs that many more).
	RequestsPerSec float64 `json:"requestsPerSec"`
	SentPerSec     float64 `json:"sentPerSec"`
	// Withheld, if set, says why the sizes above are not to be trusted
	// (Withheld: too few requests seen); the report prints it instead.
	Withheld string `json:"withheld,omitempty"`
}

// String is the advice as one line for an operator.
func (a Advice) String() string {
	s := fmt.Sprintf("now %d/worker miss %.3f (%.0f URLs/s sent); knee %d/worker miss %.3f %s",
		a.CurrentPerWorker, a.CurrentMiss, a.SentPerSec, a.KneePerWorker, a.KneeMiss, saves(a.KneeSavedPerSec))
	if a.Reached20 {
		s += fmt.Sprintf("; 20%% miss at %d/worker %s", a.K20PerWorker, saves(a.K20SavedPerSec))
	} else {
		s += "; 20% miss not reached at any size"
	}
	return s
}

// MissAt interpolates curve (points ascending in K) at k, linearly in
// log₂ k; clamped to the ends.
func MissAt(curve []Point, k int) float64 {
	if len(curve) == 0 {
		return math.NaN()
	}
	if k <= curve[0].K {
		return curve[0].MissRatio
	}
	for i := 1; i < len(curve); i++ {
		if k <= curve[i].K {
			a, b := curve[i-1], curve[i]
			f := (math.Log2(float64(k)) - math.Log2(float64(a.K))) /
				(math.Log2(float64(b.K)) - math.Log2(float64(a.K)))
			return a.MissRatio + f*(b.MissRatio-a.MissRatio)
		}
	}
	return curve[len(curve)-1].MissRatio
}

// Knee returns the index of the knee of curve: the point farthest below the
// chord from the first point to the last, on a log₂ k axis. 0 for curves of
// fewer than three points or without a point below the chord.
func Knee(curve []Point) int {
	if len(curve) < 3 {
		return 0
	}
	x0, y0 := math.Log2(float64(curve[0].K)), curve[0].MissRatio
	x1, y1 := math.Log2(float64(curve[len(curve)-1].K)), curve[len(curve)-1].MissRatio
	best, bi := 0.0, 0
	for i, p := range curve {
		x := math.Log2(float64(p.K))
		chord := y0 + (y1-y0)*(x-x0)/(x1-x0)
		if d := chord - p.MissRatio; d > best {
			best, bi = d, i
		}
	}
	return bi
}

// MakeAdvice computes the advice for curve (ascending in K), the current
// per-worker size, the number of workers and the observed request rate.
func MakeAdvice(curve []Point, currentPerWorker, workers int, requestsPerSec float64) Advice {
	workers = max(workers, 1)
	a := Advice{
		Workers: workers, CurrentPerWorker: currentPerWorker,
		CurrentK: currentPerWorker * workers, RequestsPerSec: requestsPerSec,
	}
	if len(curve) == 0 {
		return a
	}
	per := func(k int) int { return (k + workers - 1) / workers }
	a.CurrentMiss = MissAt(curve, max(a.CurrentK, 1))
	a.SentPerSec = a.CurrentMiss * requestsPerSec
	kn := curve[Knee(curve)]
	a.KneeK, a.KneePerWorker, a.KneeMiss = kn.K, per(kn.K), kn.MissRatio
	a.KneeSavedPerSec = (a.CurrentMiss - kn.MissRatio) * requestsPerSec
	for _, p := range curve {
		if p.MissRatio <= Target {
			a.Reached20, a.K20, a.K20PerWorker = true, p.K, per(p.K)
			a.K20SavedPerSec = (a.CurrentMiss - p.MissRatio) * requestsPerSec
			break
		}
	}
	return a
}

// saves words a URLs/s difference: positive saves, negative costs.
func saves(x float64) string {
	if x < 0 {
		return fmt.Sprintf("costs %.0f more URLs/s", -x)
	}
	return fmt.Sprintf("saves %.0f URLs/s", x)
}
