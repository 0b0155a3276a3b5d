package cache

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
