package cachesim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
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
		if !slices.Contains(Known, a) {
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
// counts, CLOCK and RANDOM per size with the production caches, the exact
// CLOCKs per size over dense ids; the one-pass curves and the per-size runs go
// in parallel on o.Procs goroutines. At sizes with room for every distinct
// fingerprint no policy evicts, so those points are the number of distinct
// fingerprints without a run. Traces must have fewer than 2³²−1 requests.
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
	s := &sim{o: o, trace: trace, m: &meter{ctx: ctx, fn: o.Progress}, misses: map[string]map[int]uint64{}}
	s.ids, s.d = densify(trace)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, a := range o.Algos {
		s.misses[a] = map[int]uint64{}
	}
	s.m.total = int64(n) // densify
	s.plan()
	if err := s.m.tick(n); err != nil {
		return nil, err
	}
	if err := s.run(); err != nil {
		return nil, err
	}
	return s.results(), nil
}

// sim is one Simulate call: its dense trace, its jobs and their results.
type sim struct {
	o      SimOptions
	trace  []uint64
	ids    []uint32
	d      int
	m      *meter
	jobs   []job
	misses map[string]map[int]uint64 // algorithm → k → misses
	lru    []uint64                  // LRU's misses at o.Ks, from the one-pass job
	min    []uint64                  // MIN's
}

// job computes one per-size point (k ≥ 0) or a whole curve (k < 0, which
// stores its result itself).
type job struct {
	algo string
	k    int
	run  func() (uint64, error)
}

func (s *sim) has(a string) bool { return slices.Contains(s.o.Algos, a) }

// plan fills the points known without a run and lists the jobs.
func (s *sim) plan() {
	n, o := len(s.ids), s.o
	if s.has(AlgoInfinite) {
		for _, k := range o.Ks {
			s.misses[AlgoInfinite][k] = uint64(s.d)
		}
	}
	if s.has(AlgoStatic) {
		for i, v := range staticMisses(s.ids, s.d, o.Ks, o.ChargeStaticLoad) {
			s.misses[AlgoStatic][o.Ks[i]] = v
		}
	}
	if s.has(AlgoLRU) {
		s.m.total += int64(n)
		s.jobs = append(s.jobs, job{algo: AlgoLRU, k: -1, run: func() (uint64, error) {
			var err error
			s.lru, err = lruMisses(s.ids, s.d, o.Ks, s.m)
			return 0, err
		}})
	}
	if s.has(AlgoMIN) {
		s.m.total += 2 * int64(n) // next uses, then the pass
		s.jobs = append(s.jobs, job{algo: AlgoMIN, k: -1, run: func() (uint64, error) {
			next := nextUses(s.ids, s.d)
			if err := s.m.tick(n); err != nil {
				return 0, err
			}
			var err error
			s.min, err = minStackMisses(s.ids, next, s.d, o.Ks, s.m)
			return 0, err
		}})
	}
	ks := slices.Clone(o.Ks)
	slices.Reverse(ks) // big sizes first: they take longest
	for _, k := range ks {
		for _, a := range perSize {
			if !s.has(a) {
				continue
			}
			if k >= s.d {
				s.misses[a][k] = uint64(s.d)
				continue
			}
			s.jobs = append(s.jobs, job{a, k, s.perSizeRun(a, k)})
			s.m.total += int64(n)
		}
	}
}

// perSize are the policies simulated one cache size at a time.
var perSize = []string{AlgoClock, AlgoRandom, AlgoClockExact, AlgoClockExactMarked}

// perSizeRun returns the run of policy a at size k.
func (s *sim) perSizeRun(a string, k int) func() (uint64, error) {
	switch a {
	case AlgoClock:
		return func() (uint64, error) { return replay(cache.NewClock(k), s.trace, s.m) }
	case AlgoRandom:
		return func() (uint64, error) { return replay(cache.NewRandom(k, s.o.Seed), s.trace, s.m) }
	default:
		marked := a == AlgoClockExactMarked
		return func() (uint64, error) { return exactClockMisses(s.ids, s.d, k, marked, s.m) }
	}
}

// run runs the jobs on o.Procs goroutines and waits for them.
func (s *sim) run() error {
	var mu sync.Mutex
	var firstErr error
	ch := make(chan job)
	var wg sync.WaitGroup
	for range s.o.Procs {
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
					s.misses[j.algo][j.k] = v
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range s.jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	return firstErr
}

// results assembles the points in o.Algos order, then by size.
func (s *sim) results() []Result {
	n, o := len(s.ids), s.o
	for i, v := range s.lru {
		s.misses[AlgoLRU][o.Ks[i]] = v
	}
	for i, v := range s.min {
		s.misses[AlgoMIN][o.Ks[i]] = v
	}
	var out []Result
	for _, a := range o.Algos {
		for _, k := range o.Ks {
			r := Result{Algo: a, K: k, Requests: uint64(n), Misses: s.misses[a][k], RelMin: math.NaN()}
			if n > 0 {
				r.MissRate = float64(r.Misses) / float64(n)
			}
			if mm, ok := s.misses[AlgoMIN][k]; ok && s.has(AlgoMIN) && mm > 0 {
				r.RelMin = float64(r.Misses) / float64(mm)
			}
			out = append(out, r)
		}
	}
	return out
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
