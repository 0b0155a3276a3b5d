package cache

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestCtableFill: the tables fill to k entries whatever the keys (random,
// small integers, an arithmetic progression, multiples of 2³²) with few
// displacement walks and no entry dropped. Once full, under a stream of
// new fingerprints, neither walks again: RANDOM evicts within the bucket
// pair, and so does CLOCK when the new fingerprint's buckets are both full
// (it walked on 28–32% of its misses before); neither drops an entry, and
// both keep exactly k.
func TestCtableFill(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, k := range []int{100, 1 << 10, 1 << 16} {
		for name, key := range map[string]func(i int) uint64{
			"random":      func(int) uint64 { return r.Uint64() },
			"small":       func(i int) uint64 { return uint64(i) },
			"progression": func(i int) uint64 { return uint64(i)*0x9e3779b97f4a7c15 + 7 },
			"stride":      func(i int) uint64 { return uint64(i) << 32 },
		} {
			for _, c := range []interface {
				Cache
				table() *ctable
			}{NewClock(k), NewRandom(k, 1)} {
				label := fmt.Sprintf("%T k=%d %s", c, k, name)
				for i := range k {
					c.Seen(key(i))
				}
				tb := c.table()
				if tb.drops != 0 || c.Len() != k {
					t.Fatalf("%s: %d entries dropped, %d held", label, tb.drops, c.Len())
				}
				if w := float64(tb.walks) / float64(k); w > 0.08 {
					t.Errorf("%s: %.1f%% of the inserts walked, want ≤ 8%%", label, 100*w)
				}
				w0 := tb.walks
				for i := range 2 * k {
					c.Seen(mix64(uint64(1<<40 + i)))
				}
				maxWalks := uint64(0)
				if tb.walks-w0 > maxWalks || tb.drops != 0 || c.Len() != k {
					t.Errorf("%s: full cache walked on %d of %d misses (want ≤ %d), dropped %d, holds %d", label, tb.walks-w0, 2*k, maxWalks, tb.drops, c.Len())
				}
			}
		}
	}
}

func (c *Clock) table() *ctable  { return &c.t }
func (c *Random) table() *ctable { return &c.t }

// pairCollisions returns n fingerprints, tried from mix64(from) on, whose
// two buckets in tb are those of ref (in either order): more than 16 of
// them cannot all be in the table.
func pairCollisions(tb *ctable, ref, from uint64, n int) []uint64 {
	b1, b2 := tb.buckets(Key(ref))
	var out []uint64
	for i := from; len(out) < n; i++ {
		fp := mix64(i)
		if x1, x2 := tb.buckets(Key(fp)); (x1 == b1 && x2 == b2) || (x1 == b2 && x2 == b1) {
			out = append(out, fp)
		}
	}
	return out
}
