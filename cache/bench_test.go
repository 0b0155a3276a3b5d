package cache

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time: on a shared machine it is
// a steadier per-operation figure than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func benchSizes() []int {
	ks := []int{1 << 10, 1 << 16, 1 << 20}
	if os.Getenv("SEXTANT_LONG") != "" {
		ks = append(ks, 1<<25)
	}
	return ks
}

// BenchmarkLookup measures Seen on a full cache (gomap is the baseline: a Go
// map with FIFO eviction): "hit" looks up resident
// fingerprints in a scattered order, "miss" new ones (each evicts and
// inserts). Metrics: ns/lookup (wall), cpu-ns/lookup (process CPU time, less
// disturbed by other load), B/entry (heap growth of building and filling the
// cache, divided by k). k = 2^25 runs with SEXTANT_LONG=1.
//
//	go test ./cache -run '^$' -bench Lookup -benchtime 2000000x
func BenchmarkLookup(b *testing.B) {
	for _, algo := range []string{"gomap", AlgoClock, AlgoRandom, AlgoLRU, AlgoStatic, AlgoInfinite} {
		for _, k := range benchSizes() {
			for _, kind := range []string{"hit", "miss"} {
				if algo == AlgoInfinite && kind == "miss" {
					continue // grows without bound
				}
				b.Run(fmt.Sprintf("%s/k=2^%d/%s", algo, log2(k), kind), func(b *testing.B) {
					benchLookup(b, algo, k, kind == "hit")
				})
			}
		}
	}
}

func log2(k int) int {
	e := 0
	for 1<<e < k {
		e++
	}
	return e
}

func benchLookup(b *testing.B, algo string, k int, hit bool) {
	before := heapInUse()
	var c Cache
	if algo == "gomap" {
		c = newGoMapFIFO(k)
		for i := range k {
			c.Seen(mix64(uint64(i) + 1))
		}
	} else if algo == AlgoStatic {
		top := make([]uint64, k)
		for i := range top {
			top[i] = mix64(uint64(i) + 1)
		}
		c = NewStatic(top)
		top = nil
	} else {
		var err error
		if c, err = New(algo, k); err != nil {
			b.Fatal(err)
		}
		for i := range k {
			c.Seen(mix64(uint64(i) + 1))
		}
	}
	bytesPerEntry := float64(heapInUse()-before) / float64(k)
	stride := uint64(strideFor(uint64(k)))
	if stride == 0 {
		stride = 1
	}
	b.ResetTimer()
	cpu := cpuTime()
	var hits uint64
	if hit {
		j := uint64(0)
		for range b.N {
			if c.Seen(mix64(j + 1)) {
				hits++
			}
			if j += stride; j >= uint64(k) {
				j -= uint64(k)
			}
		}
	} else {
		next := uint64(k) + 1
		for range b.N {
			if c.Seen(mix64(next)) {
				hits++
			}
			next++
		}
	}
	b.StopTimer()
	cpuNs := float64(cpuTime()-cpu) / float64(b.N)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/lookup")
	b.ReportMetric(cpuNs, "cpu-ns/lookup")
	b.ReportMetric(bytesPerEntry, "B/entry")
	want := uint64(0)
	if hit {
		want = uint64(b.N)
	}
	// CLOCK and RANDOM keep every resident entry on a pure-hit stream; a
	// stream of new fingerprints never hits.
	if hits != want {
		b.Fatalf("%d hits of %d, want %d", hits, b.N, want)
	}
	runtime.KeepAlive(c)
}

// BenchmarkShared measures the sharded cache under all cores.
//
//	go test ./cache -run '^$' -bench Shared -benchtime 2000000x
func BenchmarkShared(b *testing.B) {
	for _, algo := range []string{AlgoClock, AlgoLRU} {
		b.Run(algo, func(b *testing.B) {
			s, err := NewShared(algo, 1<<16, 64)
			if err != nil {
				b.Fatal(err)
			}
			b.RunParallel(func(pb *testing.PB) {
				i := uint64(0)
				for pb.Next() {
					s.Seen(mix64(i % (1 << 17)))
					i++
				}
			})
		})
	}
}

// BenchmarkSimulate runs the full sweep (6 algorithms × k = 2^0…2^25) over a
// generated trace of SEXTANT_SIM_N requests (default 10^6).
//
//	SEXTANT_SIM_N=10000000 go test ./cache -run '^$' -bench Simulate -benchtime 1x
func BenchmarkSimulate(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("SEXTANT_SIM_N"); s != "" {
		fmt.Sscan(s, &n)
	}
	tr, err := Generate(GenOptions{Seed: 1}, n)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := Simulate(context.Background(), tr, SimOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N), "s/sweep")
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}

// goMapFIFO is the baseline: a Go map as the set with FIFO eviction from a
// ring, the simplest cache one would write without this package.
type goMapFIFO struct {
	set   map[uint64]struct{}
	ring  []uint64
	next  int
	stats Stats
}

func newGoMapFIFO(k int) *goMapFIFO {
	return &goMapFIFO{set: make(map[uint64]struct{}, k), ring: make([]uint64, 0, k)}
}

func (c *goMapFIFO) Seen(fp uint64) bool {
	if _, ok := c.set[fp]; ok {
		c.stats.Hits++
		return true
	}
	c.stats.Misses++
	if len(c.ring) < cap(c.ring) {
		c.ring = append(c.ring, fp)
	} else {
		delete(c.set, c.ring[c.next])
		c.ring[c.next] = fp
		c.next = (c.next + 1) % len(c.ring)
	}
	c.set[fp] = struct{}{}
	return false
}

func (c *goMapFIFO) Len() int     { return len(c.set) }
func (c *goMapFIFO) Cap() int     { return cap(c.ring) }
func (c *goMapFIFO) Stats() Stats { return c.stats }

// BenchmarkMIN compares MIN for all sizes 2^0…2^25 in one pass (the OPT
// stack) with one heap simulation per size, over a generated trace of
// SEXTANT_SIM_N requests (default 10^6). Metrics are seconds for the whole
// curve, on one goroutine.
//
//	SEXTANT_SIM_N=10000000 go test ./cache -run '^$' -bench MIN -benchtime 1x
func BenchmarkMIN(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("SEXTANT_SIM_N"); s != "" {
		fmt.Sscan(s, &n)
	}
	tr, err := Generate(GenOptions{Seed: 1}, n)
	if err != nil {
		b.Fatal(err)
	}
	ids, d := densify(tr)
	next := nextUses(ids, d)
	ks := PowersOfTwo(0, 25)
	m := &meter{ctx: context.Background()}
	b.Run("onepass", func(b *testing.B) {
		for range b.N {
			if _, err := minStackMisses(ids, next, d, ks, m); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/curve")
	})
	b.Run("persize", func(b *testing.B) {
		for range b.N {
			for _, k := range ks {
				if k >= d {
					continue
				}
				if _, err := minMisses(ids, next, d, k, m); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/curve")
	})
}
