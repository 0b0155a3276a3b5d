package cache

import (
	"math/rand/v2"
	"slices"

	"github.com/sextant-crawler/sextant/cache/tracegen"
)

// Brute-force reference policies: obviously correct, slow.

// refLRU keeps the recency stack as a slice, most recent first.
func refLRU(trace []uint64, k int) uint64 {
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

// refInfinite counts distinct fingerprints.
func refInfinite(trace []uint64) uint64 {
	seen := map[uint64]bool{}
	for _, fp := range trace {
		seen[fp] = true
	}
	return uint64(len(seen))
}

// refClockTextbook is CLOCK over k frames in insertion order: the new entry
// takes the victim's frame, marked.
func refClockTextbook(trace []uint64, k int) uint64 {
	frames := make([]uint64, 0, k)
	marks := make([]bool, 0, k)
	hand := 0
	var misses uint64
	for _, fp := range trace {
		if i := slices.Index(frames, fp); i >= 0 {
			marks[i] = true
			continue
		}
		misses++
		if k == 0 {
			continue
		}
		if len(frames) < k {
			frames = append(frames, fp)
			marks = append(marks, true)
			continue
		}
		for marks[hand] {
			marks[hand] = false
			hand = (hand + 1) % k
		}
		frames[hand], marks[hand] = fp, true
		hand = (hand + 1) % k
	}
	return misses
}

// Trace shapes for the reference tests.

func randomTrace(r *rand.Rand, n, universe int) []uint64 {
	t := make([]uint64, n)
	for i := range t {
		t[i] = mix64(uint64(r.IntN(universe)) + 1)
	}
	return t
}

// smallTrace uses tiny fingerprints: they all share home slot 0, the worst
// case for the scatter table (one long chain).
func smallTrace(r *rand.Rand, n, universe int) []uint64 {
	t := make([]uint64, n)
	for i := range t {
		t[i] = uint64(r.IntN(universe))
	}
	return t
}

// highTrace uses fingerprints near 2⁶⁴ so chains wrap around the table end.
func highTrace(r *rand.Rand, n, universe int) []uint64 {
	t := make([]uint64, n)
	for i := range t {
		t[i] = ^uint64(r.IntN(universe))
	}
	return t
}

// tagTrace uses 48 fingerprints that share three values of the low 56 bits
// and differ in their top byte (the table's tag), sixteen consecutive tags
// each. A tag compare in the borrow form (4 operations instead of
// zeroBytes' exact 5) flags tag T^1 in the slot after one holding T, and
// takes fp ⊕ 2⁵⁶ for fp: the reference tests fail with it.
func tagTrace(r *rand.Rand, n int) []uint64 {
	t := make([]uint64, n)
	for i := range t {
		t[i] = uint64(0x10+r.IntN(16))<<56 | uint64(1+r.IntN(3))
	}
	return t
}

// loopTrace cycles through universe items: LRU's worst case.
func loopTrace(n, universe int) []uint64 {
	t := make([]uint64, n)
	for i := range t {
		t[i] = uint64(i%universe)*0x9e3779b97f4a7c15 + 7
	}
	return t
}

func traceShapes(r *rand.Rand) map[string][]uint64 {
	return map[string][]uint64{
		"random": randomTrace(r, 600, 40),
		"wide":   randomTrace(r, 600, 300),
		"small":  smallTrace(r, 600, 50),
		"high":   highTrace(r, 600, 50),
		"loop":   loopTrace(600, 30),
		"tags":   tagTrace(r, 600),
		"locality": func() []uint64 {
			t, _ := tracegen.Generate(tracegen.Options{Seed: r.Uint64() | 1, Universe: 200, Window: 64}, 800)
			return t
		}(),
	}
}

// textbookClock is refClockTextbook with a map index, for long traces.
func textbookClock(trace []uint64, k int) uint64 {
	frames := make([]uint64, 0, k)
	marks := make([]bool, 0, k)
	where := make(map[uint64]int, k)
	hand := 0
	var misses uint64
	for _, fp := range trace {
		fp = Key(fp)
		if i, ok := where[fp]; ok {
			marks[i] = true
			continue
		}
		misses++
		if k == 0 {
			continue
		}
		if len(frames) < k {
			where[fp] = len(frames)
			frames = append(frames, fp)
			marks = append(marks, true)
			continue
		}
		for marks[hand] {
			marks[hand] = false
			hand = (hand + 1) % k
		}
		delete(where, frames[hand])
		frames[hand], marks[hand] = fp, true
		where[fp] = hand
		hand = (hand + 1) % k
	}
	return misses
}

// textbookRandom is RANDOM over k frames: a miss with the cache full
// evicts a frame chosen uniformly at random.
func textbookRandom(trace []uint64, k int, seed uint64) uint64 {
	r := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	frames := make([]uint64, 0, k)
	where := make(map[uint64]int, k)
	var misses uint64
	for _, fp := range trace {
		fp = Key(fp)
		if _, ok := where[fp]; ok {
			continue
		}
		misses++
		if k == 0 {
			continue
		}
		if len(frames) < k {
			where[fp] = len(frames)
			frames = append(frames, fp)
			continue
		}
		i := r.IntN(k)
		delete(where, frames[i])
		frames[i] = fp
		where[fp] = i
	}
	return misses
}
