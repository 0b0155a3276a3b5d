package cache

import (
	"fmt"
	"testing"
)

// TestCtableBalance: in a full CLOCK or RANDOM cache under a stream of new
// fingerprints, few inserts find both of their buckets full (the free slots
// are spread over the table), so few misses pay for a displacement walk.
// Before the emptier-bucket choice 36% of RANDOM's misses walked (and
// CLOCK's hand left the free slots in the buckets it had just emptied), with
// a walk that read the other buckets of all eight residents; now 28–32% walk,
// one resident per step.
func TestCtableBalance(t *testing.T) {
	for _, k := range []int{1 << 12, 1 << 16} {
		for _, c := range []interface {
			Cache
			table() *ctable
		}{NewClock(k), NewRandom(k, 1)} {
			name := fmt.Sprintf("%T k=%d", c, k)
			for i := range k {
				c.Seen(mix64(uint64(i) + 1))
			}
			for i := range 3 * k { // reach the steady state
				c.Seen(mix64(uint64(k + 1 + i)))
			}
			tb := c.table()
			w0 := tb.walks
			for i := range 2 * k {
				c.Seen(mix64(uint64(4*k + 1 + i)))
			}
			full := 0
			for b := range tb.nb {
				if tb.free(b) < 0 {
					full++
				}
			}
			walks := float64(tb.walks-w0) / float64(2*k)
			t.Logf("%s: %.1f%% of misses walked, %.1f%% of buckets full", name, 100*walks, 100*float64(full)/float64(tb.nb))
			if walks > 0.35 {
				t.Errorf("%s: %.1f%% of misses walked, want < 35%%", name, 100*walks)
			}
			if tb.drops != 0 {
				t.Errorf("%s: %d entries dropped", name, tb.drops)
			}
		}
	}
}

func (c *Clock) table() *ctable  { return &c.t }
func (c *Random) table() *ctable { return &c.t }
