package cachesim

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"github.com/sextant-crawler/sextant/cache"
)

// densify maps fingerprints to dense ids 0…d−1 in order of first request.
func densify(trace []uint64) ([]uint32, int) {
	ids := make([]uint32, len(trace))
	t := newTable(1<<10, false, true)
	for i, fp := range trace {
		fp = cache.Key(fp)
		if j := t.find(fp); j >= 0 {
			ids[i] = t.vals[j]
			continue
		}
		if (t.n+1)*10 > int(t.m)*8 {
			t = grow(&t)
		}
		ids[i] = uint32(t.n)
		t.insert(fp, uint32(t.n), false)
	}
	return ids, t.n
}

func grow(t *table) table {
	g := newTable(2*int(t.m), false, true)
	for i, s := range t.slots {
		if s != 0 {
			g.insert(s, t.vals[i], false)
		}
	}
	return g
}

// staticMisses: STATIC of size k holds the k most requested ids, so it misses
// every request outside them.
func staticMisses(ids []uint32, d int, ks []int, charge bool) []uint64 {
	counts := make([]uint64, d)
	for _, id := range ids {
		counts[id]++
	}
	slices.SortFunc(counts, func(a, b uint64) int { return cmp.Compare(b, a) })
	out := make([]uint64, len(ks))
	var top uint64
	j := 0
	for i, k := range ks {
		for ; j < min(k, d); j++ {
			top += counts[j]
		}
		out[i] = uint64(len(ids)) - top
		if charge {
			out[i] += uint64(min(k, d))
		}
	}
	return out
}

// TopK returns the k most requested fingerprints of trace (ties broken by
// first request), the contents of a STATIC cache of size k.
func TopK(trace []uint64, k int) []uint64 {
	ids, d := densify(trace)
	counts := make([]uint64, d)
	first := make([]uint64, d)
	for i := len(ids) - 1; i >= 0; i-- {
		counts[ids[i]]++
		first[ids[i]] = trace[i]
	}
	order := make([]int, d)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return counts[order[a]] > counts[order[b]] })
	var out []uint64
	for _, id := range order[:min(k, d)] {
		out = append(out, first[id])
	}
	return out
}

// lruMisses computes LRU's misses at every size of ks (sorted) in one pass.
// The stack distance of a request is 1 + the number of distinct ids requested
// since the previous request of the same id; an LRU cache of size k hits iff
// the distance is ≤ k. A Fenwick tree over time holds a 1 at the latest
// request time of every id seen, so the count is one prefix sum.
func lruMisses(ids []uint32, d int, ks []int, m *meter) ([]uint64, error) {
	n := len(ids)
	last := make([]uint32, d) // time+1 of the latest request; 0 = never
	fen := make([]int32, n+1)
	add := func(i int, v int32) {
		for ; i <= n; i += i & -i {
			fen[i] += v
		}
	}
	prefix := func(i int) int {
		s := int32(0)
		for ; i > 0; i -= i & -i {
			s += fen[i]
		}
		return int(s)
	}
	cnt := make([]uint64, len(ks)+1)
	var cold uint64
	distinct := 0
	for t, id := range ids {
		if l := int(last[id]); l == 0 {
			cold++
			distinct++
		} else {
			dist := distinct - prefix(l) + 1
			cnt[sort.SearchInts(ks, dist)]++
			add(l, -1)
		}
		add(t+1, 1)
		last[id] = uint32(t + 1)
		if (t+1)%tickEvery == 0 {
			if err := m.tick(tickEvery); err != nil {
				return nil, err
			}
		}
	}
	_ = m.tick(n % tickEvery)
	out := make([]uint64, len(ks))
	sum := cold
	for j := len(ks) - 1; j >= 0; j-- {
		sum += cnt[j+1]
		out[j] = sum
	}
	return out, nil
}

// never is the next use of a request that is not repeated.
const never = math.MaxUint32

// nextUses returns, for each request, the time of the next request of the
// same id (never if none), by reading the trace backwards.
func nextUses(ids []uint32, d int) []uint32 {
	next := make([]uint32, len(ids))
	seen := make([]uint32, d)
	for i := range seen {
		seen[i] = never
	}
	for t := len(ids) - 1; t >= 0; t-- {
		id := ids[t]
		next[t] = seen[id]
		seen[id] = uint32(t)
	}
	return next
}

// minMisses simulates Belady's MIN with k entries (one size; Simulate uses
// minStackMisses, the tests use this as its reference): on a miss with the cache
// full, evict the entry whose next request is farthest away. The cache is a
// max-heap of (next use, id) packed in a uint64, with each id's heap index.
func minMisses(ids []uint32, next []uint32, d, k int, m *meter) (uint64, error) {
	if k <= 0 {
		_ = m.tick(len(ids))
		return uint64(len(ids)), nil
	}
	pos := make([]int32, d)
	for i := range pos {
		pos[i] = -1
	}
	h := make([]uint64, 0, k)
	up := func(i int) {
		e := h[i]
		for i > 0 {
			p := (i - 1) / 2
			if h[p] >= e {
				break
			}
			h[i] = h[p]
			pos[uint32(h[i])] = int32(i)
			i = p
		}
		h[i] = e
		pos[uint32(e)] = int32(i)
	}
	down := func(i int) {
		e := h[i]
		for {
			c := 2*i + 1
			if c >= len(h) {
				break
			}
			if c+1 < len(h) && h[c+1] > h[c] {
				c++
			}
			if h[c] <= e {
				break
			}
			h[i] = h[c]
			pos[uint32(h[i])] = int32(i)
			i = c
		}
		h[i] = e
		pos[uint32(e)] = int32(i)
	}
	var misses uint64
	for t, id := range ids {
		e := uint64(next[t])<<32 | uint64(id)
		if p := pos[id]; p >= 0 {
			h[p] = e // its next use moved later: the key grew
			up(int(p))
		} else {
			misses++
			if len(h) < k {
				h = append(h, e)
				up(len(h) - 1)
			} else {
				pos[uint32(h[0])] = -1
				h[0] = e
				down(0)
			}
		}
		if (t+1)%tickEvery == 0 {
			if err := m.tick(tickEvery); err != nil {
				return 0, err
			}
		}
	}
	_ = m.tick(len(ids) % tickEvery)
	return misses, nil
}
