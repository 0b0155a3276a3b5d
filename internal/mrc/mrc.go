package mrc

import (
	"container/heap"
	"math"

	"github.com/sextant-crawler/sextant/cache"
)

// Point is one point of a miss-ratio curve: the miss ratio of a cache of K
// entries.
type Point struct {
	K         int     `json:"k"`
	MissRatio float64 `json:"missRatio"`
}

// Estimator estimates miss-ratio curves of one request stream. Not safe for
// concurrent use (see Shared).
type Estimator struct {
	o Options
	// maxT is the largest sampling threshold of any spatial tier: a
	// fingerprint whose hash is at or above it is in no sample (the
	// common case, decided by one multiply and one compare).
	maxT uint64

	// tier A. Observe only stores into the ring; drain does the sampling
	// work for the requests stored since the last drain (positions done …
	// pos-1) in one tight loop, every drainEvery requests and before a
	// curve is read. The ring holds RingLen + drainEvery requests or more,
	// so a time-sampled request still sees its RingLen predecessors.
	ring      []uint64
	pos       uint64 // requests observed; ring[pos&mask] is the next slot
	done      uint64 // requests drained
	mask      uint64
	countdown int
	rng       uint64
	seen      []uint32 // generation-stamped set for the ring scan
	seenFP    []uint64
	gen       uint32
	histA     [smallK + 1]uint64 // exact distance 0..smallK-1, [smallK] = ≥ smallK
	samplesA  uint64
	// reuseA[L] counts time samples whose previous request for the same
	// fingerprint was L+1 requests earlier (L requests in between), within
	// the ring; the rest were farther or new. The RANDOM model (see
	// randomModel) reads it.
	reuseA []uint64

	// tier B
	tB    uint64
	setB  *sampleSet
	histB []uint64 // by bucket of scaled distance (see bucket)
	missB uint64   // not tracked (cold or evicted: distance beyond range)
	maxKB int

	// tier C
	tC    uint64
	setC  *sampleSet
	heapC hashHeap
	histC []float64
	missC float64

	// miniature simulations, in groups of equal sampling rate (thresholds
	// descending)
	mini []miniGroup
}

// miniGroup is the miniature simulations sharing one sample (one sampling
// rate). The miniature LRU caches of every size are one sampleSet: a
// sampled request misses an LRU cache of m entries iff its stack distance
// in the sample is ≥ m (or it is new), exactly what cache.LRU of m entries
// would answer, for one Fenwick update instead of one LRU per size.
type miniGroup struct {
	t    uint64
	rate float64
	lru  *sampleSet
	max  int // the largest miniature size: the set tracks at most max
	sims []miniSim
}

type miniSim struct {
	k      int // full-size cache size this point stands for
	mk     int // miniature size
	clock  *cache.Clock
	random [2]*cache.Random // two seeds, averaged
	// misses in the sample; the miss ratio is misses·(1/R)/requests
	// (mRandom counts both RANDOM caches' misses).
	mClock, mRandom, mLRU uint64
}

// New returns an Estimator for o (defaults applied to a copy).
func New(o Options) (*Estimator, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	nb := o.MaxLog2 + 2
	e := &Estimator{
		o:      o,
		ring:   make([]uint64, 2*o.RingLen),
		mask:   uint64(2*o.RingLen - 1),
		rng:    o.Seed*0x9e3779b97f4a7c15 + 1,
		seen:   make([]uint32, 4*smallK),
		seenFP: make([]uint64, 4*smallK),
		reuseA: make([]uint64, o.RingLen),
		tB:     threshold(o.FineRate),
		setB:   newSampleSet(o.FineSamples + 1),
		histB:  make([]uint64, nb),
		maxKB:  int(float64(o.FineSamples) / o.FineRate),
		tC:     1 << 32,
		setC:   newSampleSet(o.MaxSamples + 1),
		histC:  make([]float64, nb),
	}
	e.countdown = e.gap()
	if o.MiniRate > 0 {
		for i := 9; i <= o.MaxLog2; i++ {
			r := o.MiniRate
			if i > 16 {
				r /= 32
			}
			k := 1 << i
			for r < 1 && float64(k)*r < float64(o.MiniMin) {
				r *= 2 // a finer miniature: at least MiniMin entries
			}
			r = min(r, 1)
			mk := int(math.Round(float64(k) * r))
			if mk < 1 {
				continue
			}
			if len(e.mini) == 0 || e.mini[len(e.mini)-1].rate != r {
				e.mini = append(e.mini, miniGroup{t: threshold(r), rate: r})
			}
			g := &e.mini[len(e.mini)-1]
			g.max = max(g.max, mk)
			g.sims = append(g.sims, miniSim{k: k, mk: mk,
				clock: cache.NewClock(mk),
				random: [2]*cache.Random{cache.NewRandom(mk, o.Seed+uint64(i)),
					cache.NewRandom(mk, o.Seed+uint64(i)+0x5bd1e995)},
			})
		}
		for i := range e.mini {
			e.mini[i].lru = newSampleSet(e.mini[i].max + 1)
		}
	}
	e.setMaxT()
	return e, nil
}

func (e *Estimator) setMaxT() {
	e.maxT = max(e.tB, e.tC)
	if len(e.mini) > 0 {
		e.maxT = max(e.maxT, e.mini[0].t)
	}
}

func threshold(r float64) uint64 { return uint64(math.Round(r * (1 << 32))) }

// hash32 spreads a fingerprint over [0, 2³²) with one xor-shift and one
// multiply (splitmix64's first round). Fingerprints are already uniform
// 64-bit hashes (xxhash); the round spreads structured keys (small integers
// in tests) too. It must not be the cache package's bucket hash (the top
// bits of fp·2⁶⁴/φ): the miniature caches are fed only fingerprints with
// small hash32, which would then all fall into the same few buckets.
func hash32(z uint64) uint64 { return ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) >> 32 }

func (e *Estimator) gap() int {
	e.rng ^= e.rng << 13
	e.rng ^= e.rng >> 7
	e.rng ^= e.rng << 17
	return 1 + int(e.rng%uint64(2*e.o.TimeSample-1))
}

// bucket maps a scaled stack distance D to its histogram bucket: 0 for
// D < 1, b for 2^(b-1) ≤ D < 2^b, capped at the last bucket. A request with
// distance D hits a cache of k = 2^i entries iff D < k iff bucket ≤ i.
func (e *Estimator) bucket(d float64) int {
	if d < 1 {
		return 0
	}
	_, exp := math.Frexp(d) // d = f·2^exp, f in [0.5,1): 2^(exp-1) ≤ d < 2^exp
	return min(exp, e.o.MaxLog2+1)
}

// drainEvery is how many requests Observe stores before it does their
// sampling work (a power of two ≤ the smallest RingLen/2).
const drainEvery = 64

// Observe records one request for fp. Cheap: a ring store and a compare;
// every drainEvery requests, drain does the (mostly unsampled) rest.
func (e *Estimator) Observe(fp uint64) {
	e.ring[e.pos&e.mask] = fp
	e.pos++
	if e.pos&(drainEvery-1) == 0 {
		e.drain()
	}
}

// ObserveBatch records fps in order (the same as Observe on each).
func (e *Estimator) ObserveBatch(fps []uint64) {
	for _, fp := range fps {
		e.Observe(fp)
	}
}

// drain does the sampling work of the requests stored since the last drain:
// the time-sampled ring scans (tier A) and, for the few fingerprints whose
// hash is below maxT, the spatial tiers. An unsampled request costs one
// multiply and one compare here.
func (e *Estimator) drain() {
	for ; e.done < e.pos; e.done++ {
		fp := e.ring[e.done&e.mask]
		if e.countdown--; e.countdown == 0 {
			e.countdown = e.gap()
			e.scanRing(fp, e.done)
		}
		if h := hash32(fp); h < e.maxT {
			e.observeSampled(fp, h)
		}
	}
}

func (e *Estimator) observeSampled(fp, h uint64) {
	if h < e.tB {
		e.observeB(fp)
	}
	if h < e.tC {
		e.observeC(fp, h)
	}
	for i := range e.mini { // thresholds descend
		g := &e.mini[i]
		if h >= g.t {
			break
		}
		d, found := g.lru.access(fp)
		if !found && g.lru.n > g.max {
			old, _ := g.lru.oldest()
			g.lru.remove(old)
		}
		for j := range g.sims {
			m := &g.sims[j]
			if !found || d >= m.mk {
				m.mLRU++
			}
			if !m.clock.Seen(fp) {
				m.mClock++
			}
			if !m.random[0].Seen(fp) {
				m.mRandom++
			}
			if !m.random[1].Seen(fp) {
				m.mRandom++
			}
		}
	}
}

// scanRing measures the exact stack distance, up to smallK, of the request
// for fp at position at (stored at ring[at&mask]) over the RingLen-1
// requests before it.
func (e *Estimator) scanRing(fp, at uint64) {
	e.samplesA++
	e.gen++
	if e.gen == 0 {
		clear(e.seen)
		e.gen = 1
	}
	mask := e.mask
	slots := uint64(len(e.seen) - 1)
	distinct := 0
	n := min(at, uint64(e.o.RingLen-1))
	j := uint64(1)
	for ; j <= n; j++ {
		x := e.ring[(at-j)&mask]
		if x == fp {
			e.histA[distinct]++
			e.reuseA[j-1]++
			return
		}
		// Fingerprints are uniform hashes: their folded low bits index
		// the set (linear probing keeps it exact for any keys).
		for s := (x ^ x>>32) & slots; ; s = (s + 1) & slots {
			if e.seen[s] != e.gen {
				e.seen[s], e.seenFP[s] = e.gen, x
				distinct++
				break
			}
			if e.seenFP[s] == x {
				break
			}
		}
		if distinct >= smallK {
			break
		}
	}
	e.histA[smallK]++
	// Beyond smallK distinct fingerprints only the reuse time is wanted.
	for j++; j <= n; j++ {
		if e.ring[(at-j)&mask] == fp {
			e.reuseA[j-1]++
			return
		}
	}
}

func (e *Estimator) observeB(fp uint64) {
	d, ok := e.setB.access(fp)
	if !ok {
		e.missB++
		if e.setB.n > e.o.FineSamples {
			old, _ := e.setB.oldest()
			e.setB.remove(old)
		}
		return
	}
	e.histB[e.bucket(float64(d)/e.o.FineRate)]++
}

func (e *Estimator) observeC(fp, h uint64) {
	r := float64(e.tC) / (1 << 32)
	d, ok := e.setC.access(fp)
	if !ok {
		e.missC += 1 / r
		heap.Push(&e.heapC, hashed{h, fp})
		for e.setC.n > e.o.MaxSamples {
			// Lower the threshold to the largest hash and evict every
			// fingerprint at or above it.
			top := e.heapC[0].h
			e.tC = top
			for len(e.heapC) > 0 && e.heapC[0].h >= top {
				x := heap.Pop(&e.heapC).(hashed)
				e.setC.remove(x.fp)
			}
			e.setMaxT()
		}
		return
	}
	e.histC[e.bucket(float64(d)/r)] += 1 / r
}

// Requests is the number of requests observed.
func (e *Estimator) Requests() uint64 { return e.pos }

// Rate is the current sampling rate of the fixed-size SHARDS tier (as of
// the last drain: Curve drains).
func (e *Estimator) Rate() float64 { return float64(e.tC) / (1 << 32) }

// Bytes estimates the memory the Estimator holds.
func (e *Estimator) Bytes() int {
	b := len(e.ring)*8 + len(e.seen)*12 + len(e.reuseA)*8
	b += e.setB.bytes(e.o.FineSamples+1) + e.setC.bytes(e.o.MaxSamples+1) + (e.o.MaxSamples+1)*16
	for _, g := range e.mini {
		b += g.lru.bytes(g.max + 1)
		for _, m := range g.sims {
			b += m.clock.Bytes() + m.random[0].Bytes() + m.random[1].Bytes()
		}
	}
	return b
}

type hashed struct{ h, fp uint64 }

// hashHeap is a max-heap by hash.
type hashHeap []hashed

func (h hashHeap) Len() int           { return len(h) }
func (h hashHeap) Less(i, j int) bool { return h[i].h > h[j].h }
func (h hashHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hashHeap) Push(x any)        { *h = append(*h, x.(hashed)) }
func (h *hashHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
