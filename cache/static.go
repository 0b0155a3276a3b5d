package cache

// Static is a STATIC cache: it holds a fixed set of fingerprints (the most
// frequent ones of a trace, see TopK) and never inserts or evicts. Its initial
// load is not counted as misses. Not safe for concurrent use (Seen updates the
// counters).
type Static struct {
	t     table
	stats Stats
}

// NewStatic returns a STATIC cache holding the distinct fingerprints of top.
func NewStatic(top []uint64) *Static {
	c := &Static{t: newTable(len(top)+len(top)/2+1, false, false)}
	for _, fp := range top {
		fp = key(fp)
		if c.t.find(fp) < 0 {
			c.t.insert(fp, 0, false)
		}
	}
	return c
}

// Seen implements Cache; it never inserts.
func (c *Static) Seen(fp uint64) bool {
	if c.t.find(key(fp)) >= 0 {
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
func (c *Static) Stats() Stats { return c.stats }

// Infinite is an unbounded cache: it misses exactly once per distinct
// fingerprint. Memory grows with the number of distinct fingerprints; it is a
// bound for the simulator and tests, not for production. Not safe for
// concurrent use.
type Infinite struct {
	set   map[uint64]struct{}
	stats Stats
}

// NewInfinite returns an empty unbounded cache.
func NewInfinite() *Infinite { return &Infinite{set: map[uint64]struct{}{}} }

// Seen implements Cache.
func (c *Infinite) Seen(fp uint64) bool {
	if _, ok := c.set[fp]; ok {
		c.stats.Hits++
		return true
	}
	c.set[fp] = struct{}{}
	c.stats.Misses++
	return false
}

// Len implements Cache.
func (c *Infinite) Len() int { return len(c.set) }

// Cap implements Cache; an Infinite cache reports -1 (no bound).
func (c *Infinite) Cap() int { return -1 }

// Stats implements Cache.
func (c *Infinite) Stats() Stats { return c.stats }
