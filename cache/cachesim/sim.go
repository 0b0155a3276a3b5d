package cachesim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sextant-crawler/sextant/cache"
)

// Result is one point of a miss-rate curve.
type Result struct {
	Algo     string
	K        int
	Requests uint64
	Misses   uint64
	MissRate float64
	// RelMin is MissRate divided by MIN's miss rate at the same K; NaN when
	// MIN was not simulated.
	RelMin float64
}

// SimOptions configure Simulate. Zero fields take the defaults noted.
type SimOptions struct {
	Algos []string // default Algorithms
	Ks    []int    // cache sizes; default PowersOfTwo(0, 25)
	Procs int      // goroutines; default runtime.GOMAXPROCS(0)
	Seed  uint64   // seed of RANDOM; default cache.DefaultSeed
	// ChargeStaticLoad counts STATIC's initial load (one miss per preloaded
	// entry); by default it is free, as in the caching study.
	ChargeStaticLoad bool
	// SampleRate in (0,1) simulates only the fingerprints whose hash falls
	// in that fraction of the hash space, with every cache scaled by the
	// same fraction, and scales the misses back: an approximate curve at a
	// fraction of the time and memory (spatial sampling, SHARDS: Waldspurger
	// et al., FAST'15). 0 or 1 means exact.
	SampleRate float64
	// Progress, if set, is called from the simulating goroutines (so it must
	// be safe for concurrent use) about every 64Ki requests with the work
	// done so far and the total, in requests processed.
	Progress func(done, total int64)
}

// ErrBadSimOptions is wrapped by SimOptions.Validate.
var ErrBadSimOptions = errors.New("cachesim: bad simulation options")

// PowersOfTwo returns 2^lo … 2^hi.
func PowersOfTwo(lo, hi int) []int {
	var ks []int
	for e := lo; e <= hi; e++ {
		ks = append(ks, 1<<e)
	}
	return ks
}

// EnsureDefaults fills zero fields and sorts Ks.
func (o *SimOptions) EnsureDefaults() {
	if len(o.Algos) == 0 {
		o.Algos = append([]string(nil), Algorithms...)
	}
	if len(o.Ks) == 0 {
		o.Ks = PowersOfTwo(0, 25)
	}
	o.Ks = slices.Clone(o.Ks)
	slices.Sort(o.Ks)
	o.Ks = slices.Compact(o.Ks)
	if o.Procs <= 0 {
		o.Procs = runtime.GOMAXPROCS(0)
	}
	if o.Seed == 0 {
		o.Seed = cache.DefaultSeed
	}
}

// Validate reports every bad field.
func (o *SimOptions) Validate() error {
	var errs []string
	for _, a := range o.Algos {
		if !slices.Contains(Algorithms, a) {
			errs = append(errs, fmt.Sprintf("unknown algorithm %q", a))
		}
	}
	for _, k := range o.Ks {
		if k < 0 {
			errs = append(errs, fmt.Sprintf("cache size %d < 0", k))
		}
	}
	if o.SampleRate < 0 || o.SampleRate > 1 || math.IsNaN(o.SampleRate) {
		errs = append(errs, fmt.Sprintf("sample rate %g outside [0,1]", o.SampleRate))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrBadSimOptions, strings.Join(errs, "; "))
	}
	return nil
}

// sampled runs Simulate on the spatially sampled trace and scales back.
func sampled(ctx context.Context, trace []uint64, o SimOptions) ([]Result, error) {
	r := o.SampleRate
	limit := uint64(r * (1 << 32))
	var sub []uint64
	for _, fp := range trace {
		if mix64(fp)>>32 < limit {
			sub = append(sub, fp)
		}
	}
	scaled := map[int]int{}
	inner := o
	inner.SampleRate, inner.Ks = 0, nil
	for _, k := range o.Ks {
		ks := int(math.Round(float64(k) * r))
		scaled[k] = ks
		inner.Ks = append(inner.Ks, ks)
	}
	res, err := Simulate(ctx, sub, inner)
	if err != nil {
		return nil, err
	}
	at := map[string]map[int]Result{}
	for _, x := range res {
		if at[x.Algo] == nil {
			at[x.Algo] = map[int]Result{}
		}
		at[x.Algo][x.K] = x
	}
	var out []Result
	for _, a := range inner.Algos {
		for _, k := range o.Ks {
			x := at[a][scaled[k]]
			x.K, x.Requests = k, uint64(len(trace))
			x.Misses = min(uint64(math.Round(float64(x.Misses)/r)), x.Requests)
			x.MissRate = 0
			if x.Requests > 0 {
				x.MissRate = float64(x.Misses) / float64(x.Requests)
			}
			out = append(out, x)
		}
	}
	return out, nil
}

// meter counts work for the progress callback and polls for cancellation.
type meter struct {
	ctx   context.Context
	done  atomic.Int64
	total int64
	fn    func(done, total int64)
}

const tickEvery = 1 << 16

func (m *meter) tick(n int) error {
	d := m.done.Add(int64(n))
	if m.fn != nil {
		m.fn(d, m.total)
	}
	return m.ctx.Err()
}

// Simulate runs every algorithm of o at every cache size over trace and
// returns one Result per (algorithm, size), ordered as o.Algos then by size.
// LRU is computed for all sizes in one pass (Mattson stack distances over a
// Fenwick tree), MIN for all sizes in one pass (the OPT stack with one heap per
// level between sizes, see minstack.go), STATIC and INFINITE from frequency
// counts, CLOCK and RANDOM per size with the production caches; the two
// one-pass curves and the per-size runs go in parallel on o.Procs goroutines. At sizes with
// room for every distinct fingerprint no policy evicts, so those points are
// the number of distinct fingerprints without a run. Traces must have fewer
// than 2³²−1 requests.
func Simulate(ctx context.Context, trace []uint64, o SimOptions) ([]Result, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.SampleRate > 0 && o.SampleRate < 1 {
		return sampled(ctx, trace, o)
	}
	n := len(trace)
	if uint64(n) >= math.MaxUint32 {
		return nil, fmt.Errorf("%w: trace of %d requests is too long", ErrBadSimOptions, n)
	}
	has := func(a string) bool { return slices.Contains(o.Algos, a) }
	m := &meter{ctx: ctx, fn: o.Progress}
	ids, d := densify(trace)
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	type job struct {
		algo string
		k    int
		run  func() (uint64, error)
	}
	var jobs []job
	misses := map[string]map[int]uint64{}
	for _, a := range o.Algos {
		misses[a] = map[int]uint64{}
	}
	m.total = int64(n) // densify
	if has(AlgoInfinite) {
		for _, k := range o.Ks {
			misses[AlgoInfinite][k] = uint64(d)
		}
	}
	if has(AlgoStatic) {
		for i, v := range staticMisses(ids, d, o.Ks, o.ChargeStaticLoad) {
			misses[AlgoStatic][o.Ks[i]] = v
		}
	}
	var lru []uint64
	if has(AlgoLRU) {
		m.total += int64(n)
		jobs = append(jobs, job{algo: AlgoLRU, k: -1, run: func() (uint64, error) {
			var err error
			lru, err = lruMisses(ids, d, o.Ks, m)
			return 0, err
		}})
	}
	var minCurve []uint64
	if has(AlgoMIN) {
		m.total += 2 * int64(n) // next uses, then the pass
		jobs = append(jobs, job{algo: AlgoMIN, k: -1, run: func() (uint64, error) {
			next := nextUses(ids, d)
			if err := m.tick(n); err != nil {
				return 0, err
			}
			var err error
			minCurve, err = minStackMisses(ids, next, d, o.Ks, m)
			return 0, err
		}})
	}
	ks := slices.Clone(o.Ks)
	slices.Reverse(ks) // big sizes first: they take longest
	for _, k := range ks {
		for _, a := range []string{AlgoClock, AlgoRandom} {
			if !has(a) {
				continue
			}
			if k >= d {
				misses[a][k] = uint64(d)
				continue
			}
			var c func() cache.Cache
			switch a {
			case AlgoClock:
				c = func() cache.Cache { return cache.NewClock(k) }
			case AlgoRandom:
				c = func() cache.Cache { return cache.NewRandom(k, o.Seed) }
			}
			jobs = append(jobs, job{a, k, func() (uint64, error) { return replay(c(), trace, m) }})
			m.total += int64(n)
		}
	}
	if err := m.tick(n); err != nil {
		return nil, err
	}

	var mu sync.Mutex
	var firstErr error
	ch := make(chan job)
	var wg sync.WaitGroup
	for range o.Procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				v, err := j.run()
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if j.k >= 0 {
					misses[j.algo][j.k] = v
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if lru != nil {
		for i, v := range lru {
			misses[AlgoLRU][o.Ks[i]] = v
		}
	}
	if minCurve != nil {
		for i, v := range minCurve {
			misses[AlgoMIN][o.Ks[i]] = v
		}
	}

	var out []Result
	for _, a := range o.Algos {
		for _, k := range o.Ks {
			r := Result{Algo: a, K: k, Requests: uint64(n), Misses: misses[a][k], RelMin: math.NaN()}
			if n > 0 {
				r.MissRate = float64(r.Misses) / float64(n)
			}
			if mm, ok := misses[AlgoMIN][k]; ok && has(AlgoMIN) && mm > 0 {
				r.RelMin = float64(r.Misses) / float64(mm)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// replay feeds trace to c and returns its misses. CLOCK and RANDOM, which
// take almost all of a sweep's time, are called as concrete types.
func replay(c cache.Cache, trace []uint64, m *meter) (uint64, error) {
	for i := 0; i < len(trace); i += tickEvery {
		end := min(i+tickEvery, len(trace))
		switch cc := c.(type) {
		case *cache.Clock:
			for _, fp := range trace[i:end] {
				cc.Seen(fp)
			}
		case *cache.Random:
			for _, fp := range trace[i:end] {
				cc.Seen(fp)
			}
		default:
			for _, fp := range trace[i:end] {
				c.Seen(fp)
			}
		}
		if err := m.tick(end - i); err != nil {
			return 0, err
		}
	}
	return c.Stats().Misses, nil
}

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
