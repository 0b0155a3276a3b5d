package mrc

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/cache/cachesim"
	"github.com/sextant-crawler/sextant/cache/tracegen"
	"github.com/sextant-crawler/sextant/internal/fingerprint"
)

// TestSampleSetDistances checks stack distances, eviction of the oldest and
// compaction against a naive move-to-front list.
func TestSampleSetDistances(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const capN = 50
	s := newSampleSet(capN)
	var stack []uint64 // most recent first
	for i := 0; i < 20000; i++ {
		fp := uint64(rng.IntN(80))
		d, ok := s.access(fp)
		idx := -1
		for j, x := range stack {
			if x == fp {
				idx = j
				break
			}
		}
		if (idx >= 0) != ok || (ok && d != idx) {
			t.Fatalf("step %d fp %d: got (%d,%v), want index %d", i, fp, d, ok, idx)
		}
		if idx >= 0 {
			stack = append(stack[:idx], stack[idx+1:]...)
		}
		stack = append([]uint64{fp}, stack...)
		if s.n > capN {
			old, _ := s.oldest()
			if want := stack[len(stack)-1]; old != want {
				t.Fatalf("step %d: oldest %d, want %d", i, old, want)
			}
			s.remove(old)
			stack = stack[:len(stack)-1]
		}
		if s.n != len(stack) {
			t.Fatalf("step %d: n %d want %d", i, s.n, len(stack))
		}
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{{MaxLog2: 3}, {RingLen: 1000}, {FineRate: 2}, {MaxSamples: 1}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted bad options", o)
		}
	}
	e, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Curve("fifo"); err == nil {
		t.Error("Curve accepted an unknown algorithm")
	}
	if c, _ := e.Curve(LRU); c != nil {
		t.Error("curve before any request")
	}
	if b := e.Bytes(); b > 3_000_000 { // three curves, ~1 MB each
		t.Errorf("Bytes %d: over the memory budget", b)
	}
	t.Logf("memory per estimator: %d bytes", e.Bytes())
}

// simwebLike makes a crawl-like stream of URL fingerprints: pages crawled
// host by host; each page has ~60 links, ~80% to pages of its own host
// (Zipf-popular), the rest to other hosts' home and top pages (Zipf over
// hosts), and ~30% of a page's links repeated on the page.
func simwebLike(n int, seed uint64) []uint64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	hostZ := rand.NewZipf(rng, 1.2, 1, 1<<20)
	pageZ := rand.NewZipf(rng, 1.1, 1, 1<<16)
	out := make([]uint64, 0, n)
	host := 0
	for len(out) < n {
		if rng.IntN(20) == 0 {
			host = int(hostZ.Uint64())
		}
		links := 1 + int(rng.ExpFloat64()*59)
		var page []uint64
		for j := 0; j < links && len(out) < n; j++ {
			var fp uint64
			switch {
			case len(page) > 0 && rng.Float64() < 0.3:
				fp = page[rng.IntN(len(page))]
			case rng.Float64() < 0.8:
				fp = fingerprint.URL("http://h" + strconv.Itoa(host) + ".sim.test/p" + strconv.FormatUint(pageZ.Uint64(), 10))
			default:
				h := strconv.FormatUint(hostZ.Uint64(), 10)
				p := "/"
				if rng.IntN(2) == 0 {
					p = "/p" + strconv.Itoa(rng.IntN(8))
				}
				fp = fingerprint.URL("http://h" + h + ".sim.test" + p)
			}
			page = append(page, fp)
			out = append(out, fp)
		}
	}
	return out
}

func traceLen() int {
	if os.Getenv("SEXTANT_LONG") != "" {
		return 20_000_000
	}
	return 3_000_000
}

// TestAccuracy compares the estimated curves with the exact ones from
// cachesim.Simulate on the same traces: mean absolute error ≤ 0.01 over
// k = 2⁰ … 2²⁵ (the SHARDS paper's figure of merit) for LRU, CLOCK and
// RANDOM, with the default settings and Economy.
func TestAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	n := traceLen()
	zipf, err := tracegen.Generate(tracegen.Options{}, n)
	if err != nil {
		t.Fatal(err)
	}
	traces := map[string][]uint64{"zipf+recency": zipf, "simweb-like": simwebLike(n, 3)}
	for name, trace := range traces {
		t.Run(name, func(t *testing.T) {
			exact, err := cachesim.Simulate(context.Background(), trace, cachesim.SimOptions{
				Algos: []string{cache.AlgoLRU, cache.AlgoClock, cache.AlgoRandom}, Procs: 2,
			})
			if err != nil {
				t.Fatal(err)
			}
			for cname, o := range configs {
				e, err := New(o)
				if err != nil {
					t.Fatal(err)
				}
				for _, fp := range trace {
					e.Observe(fp)
				}
				for _, algo := range []string{LRU, CLOCK, RANDOM} {
					est, err := e.Curve(algo)
					if err != nil {
						t.Fatal(err)
					}
					var sum, worst, sumMini float64
					np, nMini := 0, 0
					for _, x := range exact {
						if x.Algo != algo {
							continue
						}
						got := est[np]
						if got.K != x.K {
							t.Fatalf("%s point %d: K %d, want %d", algo, np, got.K, x.K)
						}
						d := math.Abs(got.MissRatio - x.MissRate)
						sum += d
						worst = max(worst, d)
						if x.K >= 1<<9 {
							sumMini += d
							nMini++
						}
						np++
						if testing.Verbose() {
							t.Logf("%s k=2^%-2d exact %.4f est %.4f", algo, np-1, x.MissRate, got.MissRatio)
						}
					}
					mae, maeMini := sum/float64(np), sumMini/float64(nMini)
					t.Logf("%s %s %s: n=%d MAE %.4f (k ≥ 2^9: %.4f) max %.4f over %d points (SHARDS rate %.5f, %d bytes)",
						name, cname, algo, n, mae, maeMini, worst, np, e.Rate(), e.Bytes())
					// Every algorithm over the whole range k = 2⁰ … 2²⁵
					// (CLOCK below 2⁹ is the LRU estimate: its error
					// is counted here; see the package doc).
					if mae > 0.01 {
						t.Errorf("%s %s %s: MAE %.4f > 0.01", name, cname, algo, mae)
					}
				}
			}
		})
	}
}

// configs are the estimator settings the accuracy test and the benchmarks
// measure: the defaults and Economy.
var configs = map[string]Options{"default": {}, "economy": Economy}

// TestExactWhileSmall: while the stream has no more distinct fingerprints
// than MaxSamples, the fixed-size tier samples everything, so the LRU curve
// above the time-sampled range is exact.
func TestExactWhileSmall(t *testing.T) {
	trace, err := tracegen.Generate(tracegen.Options{Universe: 3000, NewProb: 0.0001, Seed: 5}, 200000)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := cachesim.Simulate(context.Background(), trace, cachesim.SimOptions{Algos: []string{cache.AlgoLRU}, Procs: 1})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fp := range trace {
		e.Observe(fp)
	}
	if e.Rate() != 1 {
		t.Fatalf("rate %g: the trace has more than MaxSamples distinct fingerprints", e.Rate())
	}
	est, _ := e.Curve(LRU)
	for i, x := range exact {
		d := math.Abs(est[i].MissRatio - x.MissRate)
		if x.K > smallK && d > 1e-9 {
			t.Errorf("k=%d: est %.6f exact %.6f", x.K, est[i].MissRatio, x.MissRate)
		}
		if x.K <= smallK && d > 0.03 {
			t.Errorf("k=%d (time-sampled): est %.4f exact %.4f", x.K, est[i].MissRatio, x.MissRate)
		}
	}
}

// TestSharedConcurrent drives Shared from several goroutines while curves
// are read (run with -race).
func TestSharedConcurrent(t *testing.T) {
	s, err := NewShared(Economy)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gen, _ := tracegen.New(tracegen.Options{Seed: uint64(g + 1)})
			batch := make([]uint64, 0, 64)
			for i := 0; i < 20000; i++ {
				s.Observe(gen.Next())
				batch = append(batch, gen.Next())
				if len(batch) == cap(batch) {
					s.ObserveBatch(batch)
					batch = batch[:0]
				}
				if i%5000 == 0 {
					if _, err := s.Curve(CLOCK); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	// each goroutine: 20000 singles + 312 full batches of 64 (the last
	// partial batch is never sent)
	if n, want := s.Requests(), uint64(4*(20000+20000/64*64)); n != want {
		t.Errorf("%d requests observed, want %d", n, want)
	}
	if cs := s.Curves(); len(cs) != 3 || len(cs[RANDOM]) != 26 {
		t.Errorf("Curves: %d algorithms", len(cs))
	}
	c, _ := s.Curve(LRU)
	if len(c) != 26 || c[0].MissRatio < c[25].MissRatio {
		t.Errorf("curve %v", c)
	}
}

func TestAdvice(t *testing.T) {
	curve := []Point{{1, 1}, {2, 0.9}, {4, 0.5}, {8, 0.3}, {16, 0.25}, {32, 0.24}, {64, 0.15}, {128, 0.14}}
	a := MakeAdvice(curve, 2, 2, 1000)
	if a.CurrentK != 4 || a.CurrentMiss != 0.5 || a.SentPerSec != 500 {
		t.Errorf("current: %+v", a)
	}
	if a.KneeK != 8 || a.KneePerWorker != 4 {
		t.Errorf("knee %d (%d/worker), want 8 (4)", a.KneeK, a.KneePerWorker)
	}
	if math.Abs(a.KneeSavedPerSec-200) > 1e-9 {
		t.Errorf("knee saves %g, want 200", a.KneeSavedPerSec)
	}
	if !a.Reached20 || a.K20 != 64 || a.K20PerWorker != 32 || math.Abs(a.K20SavedPerSec-350) > 1e-9 {
		t.Errorf("k20: %+v", a)
	}
	if got := MissAt(curve, 6); math.Abs(got-(0.5+(math.Log2(6)-2)*(0.3-0.5))) > 1e-12 {
		t.Errorf("MissAt(6) = %g", got)
	}
	if a := MakeAdvice(curve[:4], 1, 1, 10); a.Reached20 {
		t.Errorf("20%% reached on a curve that stays above it: %+v", a)
	}
	if s := a.String(); s == "" {
		t.Error("empty String")
	}
}

// Advice is withheld below MinRequests requests and given from it on.
func TestWithheldThreshold(t *testing.T) {
	if w := Withheld(MinRequests - 1); !strings.HasPrefix(w, "withheld: ") || !strings.Contains(w, fmt.Sprint(MinRequests-1)) {
		t.Errorf("Withheld(MinRequests-1) = %q", w)
	}
	if w := Withheld(MinRequests); w != "" {
		t.Errorf("Withheld(MinRequests) = %q, want none", w)
	}
}
