// Package reftest holds what the cache and cachesim tests share: brute-force
// reference policies (obviously correct, slow) and the trace shapes they
// are checked on. Only tests import it.
package reftest

import (
	"math/rand/v2"
	"slices"

	"github.com/sextant-crawler/sextant/cache/tracegen"
)

// LRU counts the misses of LRU over k entries, keeping the recency stack
// as a slice, most recent first.
func LRU(trace []uint64, k int) uint64 {
	var stack []uint64
	var misses uint64
	for _, fp := range trace {
		if i := slices.Index(stack, fp); i >= 0 {
			stack = slices.Delete(stack, i, i+1)
		} else {
			misses++
			if k == 0 {
				continue
			}
			if len(stack) == k {
				stack = stack[:k-1]
			}
		}
		stack = slices.Insert(stack, 0, fp)
	}
	return misses
}

// Infinite counts distinct fingerprints: the misses of an unbounded cache.
func Infinite(trace []uint64) uint64 {
	seen := map[uint64]bool{}
	for _, fp := range trace {
		seen[fp] = true
	}
	return uint64(len(seen))
}

// Random draws n fingerprints from universe well-mixed values.
func Random(r *rand.Rand, n, universe int) []uint64 {
	t := make([]uint64, n)
	for i := range t {
		t[i] = tracegen.Mix64(uint64(r.IntN(universe)) + 1)
	}
	return t
}

// Small uses tiny fingerprints: they all share home slot 0, the worst case
// for the scatter table (one long chain).
func Small(r *rand.Rand, n, universe int) []uint64 {
	t := make([]uint64, n)
	for i := range t {
		t[i] = uint64(r.IntN(universe))
	}
	return t
}

// High uses fingerprints near 2⁶⁴ so chains wrap around the table end.
func High(r *rand.Rand, n, universe int) []uint64 {
	t := make([]uint64, n)
	for i := range t {
		t[i] = ^uint64(r.IntN(universe))
	}
	return t
}

// Tags uses 48 fingerprints that share three values of the low 56 bits and
// differ in their top byte (the table's tag), sixteen consecutive tags
// each. A tag compare in the borrow form (4 operations instead of
// zeroBytes' exact 5) flags tag T^1 in the slot after one holding T, and
// takes fp ⊕ 2⁵⁶ for fp: the reference tests fail with it.
func Tags(r *rand.Rand, n int) []uint64 {
	t := make([]uint64, n)
	for i := range t {
		t[i] = uint64(0x10+r.IntN(16))<<56 | uint64(1+r.IntN(3))
	}
	return t
}

// Loop cycles through universe items: LRU's worst case.
func Loop(n, universe int) []uint64 {
	t := make([]uint64, n)
	for i := range t {
		t[i] = uint64(i%universe)*0x9e3779b97f4a7c15 + 7
	}
	return t
}

// Shapes is one trace of each shape, drawn from r.
func Shapes(r *rand.Rand) map[string][]uint64 {
	return map[string][]uint64{
		"random": Random(r, 600, 40),
		"wide":   Random(r, 600, 300),
		"small":  Small(r, 600, 50),
		"high":   High(r, 600, 50),
		"loop":   Loop(600, 30),
		"tags":   Tags(r, 600),
		"locality": func() []uint64 {
			t, _ := tracegen.Generate(tracegen.Options{Seed: r.Uint64() | 1, Universe: 200, Window: 64}, 800)
			return t
		}(),
	}
}
