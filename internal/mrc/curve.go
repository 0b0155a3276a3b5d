package mrc

import (
	"fmt"
	"math"
)

// Curve returns the estimated miss-ratio curve of algo (LRU, CLOCK or
// RANDOM) at k = 2⁰ … 2^MaxLog2. Before any request it returns nil.
func (e *Estimator) Curve(algo string) ([]Point, error) {
	switch algo {
	case LRU, CLOCK, RANDOM:
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnknownAlgo, algo)
	}
	if e.pos == 0 {
		return nil, nil
	}
	e.drain()
	n := float64(e.pos)
	out := make([]Point, 0, e.o.MaxLog2+1)
	// Suffix sums of the B and C histograms: requests with bucket > i miss
	// at k = 2^i.
	var sufB []uint64 = make([]uint64, len(e.histB)+1)
	sufC := make([]float64, len(e.histC)+1)
	for b := len(e.histB) - 1; b >= 0; b-- {
		sufB[b] = sufB[b+1] + e.histB[b]
		sufC[b] = sufC[b+1] + e.histC[b]
	}
	var sufA [smallK + 2]uint64
	for d := smallK; d >= 0; d-- {
		sufA[d] = sufA[d+1] + e.histA[d]
	}
	for i := 0; i <= e.o.MaxLog2; i++ {
		k := 1 << i
		var mr float64
		switch {
		case k <= smallK && e.samplesA > 0 && e.Rate() < 1:
			// While the fixed-size tier still samples every fingerprint
			// (rate 1) its distances are exact at every k, also below
			// smallK, where tier A has only a few time samples early on.
			mr = float64(sufA[k]) / float64(e.samplesA)
		case k <= e.maxKB/2 && e.Rate() < e.o.FineRate:
			mr = (float64(e.missB) + float64(sufB[i+1])) / (n * e.o.FineRate)
		default:
			mr = (e.missC + sufC[i+1]) / n
		}
		out = append(out, Point{K: k, MissRatio: clamp01(mr)})
	}
	if algo == LRU {
		return out, nil
	}
	if algo == RANDOM && e.samplesA > 0 {
		for i := 1; i <= e.o.MaxLog2 && 1<<i <= e.o.RingLen/4; i++ {
			out[i].MissRatio = e.randomModel(1 << i)
		}
	}
	for _, g := range e.mini {
		for _, m := range g.sims {
			i := bitsLen(m.k) - 1
			if i > e.o.MaxLog2 {
				continue
			}
			mis := float64(m.mClock)
			if algo == RANDOM {
				if m.k <= e.o.RingLen/4 && e.samplesA > 0 {
					continue // the reuse-time model covers it
				}
				mis = float64(m.mRandom) / 2
			}
			// The miniature LRU on the same sample cancels most of the
			// sampling noise: add the miniature difference to the LRU
			// estimate.
			diff := (mis - float64(m.mLRU)) / (n * g.rate)
			out[i].MissRatio = clamp01(out[i].MissRatio + diff)
		}
	}
	return out, nil
}

// randomModel estimates RANDOM's miss ratio at k from the time-sampled
// reuse times (reuseA): a request whose previous request for the same
// fingerprint was L requests earlier hits iff the fingerprint survived the
// misses in between, each of which evicts it with probability 1/k; with the
// misses spread at the miss ratio p, that is (1−1/k)^(L·p). p is the fixed
// point of p = 1 − mean hit probability. Requests not found in the ring (at
// least RingLen back) count as misses: (1−1/k)^(RingLen·p) is negligible for
// k ≤ RingLen/4 at the miss ratios caches below that size see. On the
// validation traces this is within 0.003 of the exact RANDOM curve for
// k ≤ 2⁸ given every reuse time (docs/bench/operator.md).
func (e *Estimator) randomModel(k int) float64 {
	lnq := math.Log1p(-1 / float64(k))
	ns := float64(e.samplesA)
	p := 1.0
	for it := 0; it < 200; it++ {
		base := math.Exp(lnq * p) // survival per request in between
		h, f := 0.0, 1.0
		for _, c := range e.reuseA {
			if c != 0 {
				h += float64(c) * f
			}
			f *= base
		}
		np := 1 - h/ns
		if math.Abs(np-p) < 1e-9 {
			return clamp01(np)
		}
		p = np
	}
	return clamp01(p)
}

func bitsLen(k int) int {
	n := 0
	for ; k > 0; k >>= 1 {
		n++
	}
	return n
}

func clamp01(x float64) float64 {
	if x < 0 || math.IsNaN(x) {
		return 0
	}
	return min(x, 1)
}

// Curves returns the LRU, CLOCK and RANDOM curves keyed by algorithm (the
// shape status.Cache.Curves takes); nil before any request.
func (e *Estimator) Curves() map[string][]Point {
	if e.pos == 0 {
		return nil
	}
	out := make(map[string][]Point, 3)
	for _, a := range []string{LRU, CLOCK, RANDOM} {
		out[a], _ = e.Curve(a)
	}
	return out
}
