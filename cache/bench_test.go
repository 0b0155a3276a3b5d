package cache

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/internal/cputime"
)

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// benchSizes are the sizes the issue asks figures for (2^25 takes a few
// seconds and ~1.5 GB per map-based cache to fill).
func benchSizes() []int { return []int{1 << 10, 1 << 16, 1 << 20, 1 << 25} }

// BenchmarkLookup measures Seen on a full cache (gomap is the baseline: a Go
// map with FIFO eviction): "hit" looks up resident fingerprints in a
// scattered order, "miss" new ones (each evicts and inserts). The
// fingerprints are computed before the timer starts (a slice read in order:
// hit keys cycle over min(k, 2²²) residents, miss keys over 2²⁰ fresh ones
// XORed with a new salt each cycle), so only the lookup is timed. clock and
// random call the concrete type; clock.iface and random.iface call the same
// caches through the Cache interface, as every other row does. Metrics:
// ns/lookup (wall), cpu-ns/lookup (process CPU time, less disturbed by
// other load), B/entry (heap growth of building and filling the cache,
// divided by k).
//
//	go test ./cache -run '^$' -bench Lookup -benchtime 2000000x
func BenchmarkLookup(b *testing.B) {
	algos := []string{"gomap", AlgoClock, AlgoClock + ".iface", AlgoRandom, AlgoRandom + ".iface", AlgoLRU, AlgoInfinite}
	for _, algo := range algos {
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

// lookupKeys returns the keys a lookup benchmark cycles over (length a power
// of two): residents mix64(1…k) in a scattered order, or fresh fingerprints.
func lookupKeys(k int, hit bool) []uint64 {
	if !hit {
		keys := make([]uint64, 1<<20)
		for i := range keys {
			keys[i] = mix64(uint64(k) + 1 + uint64(i))
		}
		return keys
	}
	p := 1
	for p < k && p < 1<<22 {
		p <<= 1
	}
	keys := make([]uint64, p)
	stride := strideFor(uint64(k))
	if stride == 0 {
		stride = 1
	}
	j := uint64(0)
	for i := range keys {
		keys[i] = mix64(j + 1)
		if j += stride; j >= uint64(k) {
			j -= uint64(k)
		}
	}
	return keys
}

// missSalt changes the miss keys on every cycle so that none repeats.
const missSalt = 0x9e3779b97f4a7c15

func benchLookup(b *testing.B, algo string, k int, hit bool) {
	before := heapInUse()
	var c Cache
	name, iface := strings.CutSuffix(algo, ".iface")
	if name == "gomap" {
		c = newGoMapFIFO(k)
		for i := range k {
			c.Seen(mix64(uint64(i) + 1))
		}
	} else {
		var err error
		if c, err = New(name, k); err != nil {
			b.Fatal(err)
		}
		for i := range k {
			c.Seen(mix64(uint64(i) + 1))
		}
	}
	bytesPerEntry := float64(heapInUse()-before) / float64(k)
	keys := lookupKeys(k, hit)
	mask := len(keys) - 1
	if !iface {
		// The concrete types, as a worker holding a *Clock calls them.
		switch cc := c.(type) {
		case *Clock:
			runLookups(b, k, hit, bytesPerEntry, c, func() uint64 {
				var hits uint64
				salt := uint64(0)
				for i := range b.N {
					if cc.Seen(keys[i&mask] ^ salt) {
						hits++
					}
					if i&mask == mask && !hit {
						salt += missSalt
					}
				}
				return hits
			})
			return
		case *Random:
			runLookups(b, k, hit, bytesPerEntry, c, func() uint64 {
				var hits uint64
				salt := uint64(0)
				for i := range b.N {
					if cc.Seen(keys[i&mask] ^ salt) {
						hits++
					}
					if i&mask == mask && !hit {
						salt += missSalt
					}
				}
				return hits
			})
			return
		}
	}
	runLookups(b, k, hit, bytesPerEntry, c, func() uint64 {
		var hits uint64
		salt := uint64(0)
		for i := range b.N {
			if c.Seen(keys[i&mask] ^ salt) {
				hits++
			}
			if i&mask == mask && !hit {
				salt += missSalt
			}
		}
		return hits
	})
}

// runLookups times loop (which returns its hits) and checks the hits.
func runLookups(b *testing.B, k int, hit bool, bytesPerEntry float64, c Cache, loop func() uint64) {
	b.ResetTimer()
	cpu := cputime.Process()
	hits := loop()
	b.StopTimer()
	cpuNs := float64(cputime.Process()-cpu) / float64(b.N)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/lookup")
	b.ReportMetric(cpuNs, "cpu-ns/lookup")
	b.ReportMetric(bytesPerEntry, "B/entry")
	want := uint64(0)
	if hit {
		want = uint64(b.N)
	}
	// Every cache keeps its resident entries on a pure-hit stream; a stream
	// of new fingerprints never hits.
	if hits != want {
		b.Fatalf("%d hits of %d at k=%d, want %d", hits, b.N, k, want)
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

// BenchmarkLRUPairCollisions measures LRU under fingerprints crafted to
// share one bucket pair: 600 of them over a full cache of 1,024 random
// entries, requested round after round. All but 16 go to the stash, each
// after a cuckoo walk that finds no room (walks per request reported).
//
//	go test ./cache -run '^$' -bench LRUPairCollisions
func BenchmarkLRUPairCollisions(b *testing.B) {
	const k = 1024
	c := NewLRU(k)
	evil := pairCollisions(&c.t, mix64(1<<40), 1<<40+1, 600)
	for i := range k {
		c.Seen(mix64(uint64(i) + 1))
	}
	w0 := c.t.walks
	b.ResetTimer()
	for i := range b.N {
		c.Seen(evil[i%len(evil)])
	}
	b.ReportMetric(float64(c.t.walks-w0)/float64(b.N), "walks/op")
	b.ReportMetric(float64(len(c.stash.node)), "stashed")
}
