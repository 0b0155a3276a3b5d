package cachesim

import "github.com/sextant-crawler/sextant/cache"

// Static is a STATIC cache: it holds a fixed set of fingerprints (the most
// frequent ones of a trace, see TopK) and never inserts or evicts. Its initial
// load is not counted as misses. Not safe for concurrent use (Seen updates the
// counters).
type Static struct {
	t     table
	stats cache.Stats
}

// NewStatic returns a STATIC cache holding the distinct fingerprints of top.
func NewStatic(top []uint64) *Static {
	c := &Static{t: newTable(len(top)+len(top)/2+1, false, false)}
	for _, fp := range top {
		fp = cache.Key(fp)
		if c.t.find(fp) < 0 {
			c.t.insert(fp, 0, false)
		}
	}
	return c
}

// Seen implements Cache; it never inserts.
func (c *Static) Seen(fp uint64) bool {
	if c.t.find(cache.Key(fp)) >= 0 {
		c.stats.Hits++
		return true
	}
	c.stats.Misses++
	return false
}

// Len implements Cache.
func (c *Static) Len() int { return c.t.n }

// Cap implements Cache.
func (c *Static) Cap() int { return c.t.n }

// Stats implements Cache.
func (c *Static) Stats() cache.Stats { return c.stats }
