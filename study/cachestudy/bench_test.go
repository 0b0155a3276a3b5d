package main

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/sextant-crawler/sextant/cache"
)

// keys returns n fingerprints drawn from a universe of u random 64-bit
// values (fingerprints are hashes): with a cache of u/2 entries about half
// the lookups hit.
func keys(n, u int, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 1))
	univ := make([]uint64, u)
	for i := range univ {
		univ[i] = r.Uint64()
	}
	ks := make([]uint64, n)
	for i := range ks {
		ks[i] = univ[r.IntN(u)]
	}
	return ks
}

// BenchmarkLookup compares the cost of a front-cache lookup made by W
// workers at once: per-worker caches of k/W entries (cache.New, no lock)
// against one cache.NewShared of k entries (64 locked shards). ns/op is
// wall time per lookup over all goroutines (GOMAXPROCS cores).
//
//	go test ./study/cachestudy -run '^$' -bench Lookup -benchtime 4000000x
func BenchmarkLookup(b *testing.B) {
	const k = 1 << 16
	ks := keys(1<<20, 2*k, 7)
	// One goroutine: the cost of the shard lock itself, uncontended.
	b.Run("serial/one-cache/k=2^16", func(b *testing.B) {
		c, _ := cache.New("clock", k)
		for i := range b.N {
			c.Seen(ks[i&(len(ks)-1)])
		}
	})
	b.Run("serial/shared/k=2^16", func(b *testing.B) {
		c, _ := cache.NewShared("clock", k, 0)
		for i := range b.N {
			c.Seen(ks[i&(len(ks)-1)])
		}
	})
	for _, w := range []int{8, 32, 64, 500} {
		b.Run(fmt.Sprintf("per-worker/W=%d/k=2^16", w), func(b *testing.B) {
			var id atomic.Int64
			b.SetParallelism(max(1, w/2)) // ≈ w goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				c, _ := cache.New("clock", k/w)
				i := int(id.Add(1)) * 7919
				for pb.Next() {
					c.Seen(ks[i&(len(ks)-1)])
					i++
				}
			})
		})
		b.Run(fmt.Sprintf("shared/W=%d/k=2^16", w), func(b *testing.B) {
			c, _ := cache.NewShared("clock", k, 0)
			var id atomic.Int64
			b.SetParallelism(max(1, w/2))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(id.Add(1)) * 7919
				for pb.Next() {
					c.Seen(ks[i&(len(ks)-1)])
					i++
				}
			})
		})
	}
}
