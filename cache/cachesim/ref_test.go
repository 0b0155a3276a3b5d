package cachesim

import (
	"slices"

	"github.com/sextant-crawler/sextant/cache"
)

// Brute-force reference policies: obviously correct, slow.

// refMIN evicts the entry whose next request is farthest, found by scanning
// the rest of the trace.
func refMIN(trace []uint64, k int) uint64 {
	var set []uint64
	var misses uint64
	for t, fp := range trace {
		if slices.Contains(set, fp) {
			continue
		}
		misses++
		if k == 0 {
			continue
		}
		if len(set) == k {
			far, victim := -1, 0
			for i, x := range set {
				nu := len(trace) + 1
				if j := slices.Index(trace[t+1:], x); j >= 0 {
					nu = j
				}
				if nu > far {
					far, victim = nu, i
				}
			}
			set = slices.Delete(set, victim, victim+1)
		}
		set = append(set, fp)
	}
	return misses
}

// refStatic counts misses of a cache preloaded with the k most frequent
// fingerprints (ties: first requested first).
func refStatic(trace []uint64, k int) uint64 {
	var order []uint64
	count := map[uint64]int{}
	for _, fp := range trace {
		if count[fp] == 0 {
			order = append(order, fp)
		}
		count[fp]++
	}
	slices.SortStableFunc(order, func(a, b uint64) int { return count[b] - count[a] })
	top := order[:min(k, len(order))]
	var misses uint64
	for _, fp := range trace {
		if !slices.Contains(top, fp) {
			misses++
		}
	}
	return misses
}

func run(c cache.Cache, trace []uint64) uint64 {
	for _, fp := range trace {
		c.Seen(fp)
	}
	return c.Stats().Misses
}

var testKs = []int{0, 1, 2, 3, 5, 8, 13, 31, 64, 100, 400}
