package cache

import "math/bits"

// Clock is a CLOCK cache of fingerprints in a scatter table: a hit sets the
// entry's mark bit; on a miss with the cache full the hand sweeps the table's
// slots, clearing marks, and evicts the first unmarked entry. New entries
// start marked. Not safe for concurrent use.
type Clock struct {
	t     table
	k     int
	hand  uint64
	stats Stats
}

// NewClock returns an empty CLOCK cache of k ≥ 0 entries (k = 0 never hits).
func NewClock(k int) *Clock {
	if k < 0 {
		k = 0
	}
	return &Clock{t: newTable(slotsFor(k), true, false), k: k}
}

// Seen implements Cache.
func (c *Clock) Seen(fp uint64) bool {
	fp = key(fp)
	if i := c.t.find(fp); i >= 0 {
		c.t.setMark(uint64(i))
		c.stats.Hits++
		return true
	}
	c.stats.Misses++
	if c.k == 0 {
		return false
	}
	if c.t.n >= c.k {
		c.evict()
	}
	c.t.insert(fp, 0, true)
	return false
}

// evict advances the hand to the first unmarked entry, clearing the marks it
// passes, and removes that entry. The hand stays on the emptied slot, which
// now holds the next entry of the chain (if any).
func (c *Clock) evict() {
	t := &c.t
	i := c.hand
	for {
		// Skip a whole word of marked-or-empty slots at once when aligned.
		if i&63 == 0 && i+64 <= t.m {
			w := i >> 6
			if t.marks[w] == ^uint64(0) {
				t.marks[w] = 0
				if i += 64; i == t.m {
					i = 0
				}
				continue
			}
		}
		if t.slots[i] != 0 {
			if !t.mark(i) {
				t.remove(i)
				c.hand = i
				return
			}
			t.clearMark(i)
		}
		if i++; i == t.m {
			i = 0
		}
	}
}

// Len implements Cache.
func (c *Clock) Len() int { return c.t.n }

// Cap implements Cache.
func (c *Clock) Cap() int { return c.k }

// Stats implements Cache.
func (c *Clock) Stats() Stats { return c.stats }

// Bytes is the memory held by the table.
func (c *Clock) Bytes() int { return c.t.bytes() }

// Random is a RANDOM cache of fingerprints in a scatter table: on a miss with
// the cache full it evicts an entry chosen uniformly at random. Deterministic
// for a given seed. Not safe for concurrent use.
type Random struct {
	t     table
	k     int
	rng   uint64
	stats Stats
}

// NewRandom returns an empty RANDOM cache of k ≥ 0 entries whose choices
// follow seed.
func NewRandom(k int, seed uint64) *Random {
	if k < 0 {
		k = 0
	}
	return &Random{t: newTable(slotsFor(k), false, false), k: k, rng: seed}
}

// splitmix64 advances *s and returns the next pseudo-random number.
func splitmix64(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Seen implements Cache.
func (c *Random) Seen(fp uint64) bool {
	fp = key(fp)
	if c.t.find(fp) >= 0 {
		c.stats.Hits++
		return true
	}
	c.stats.Misses++
	if c.k == 0 {
		return false
	}
	if c.t.n >= c.k {
		for {
			i, _ := bits.Mul64(splitmix64(&c.rng), c.t.m)
			if c.t.slots[i] != 0 {
				c.t.remove(i)
				break
			}
		}
	}
	c.t.insert(fp, 0, false)
	return false
}

// Len implements Cache.
func (c *Random) Len() int { return c.t.n }

// Cap implements Cache.
func (c *Random) Cap() int { return c.k }

// Stats implements Cache.
func (c *Random) Stats() Stats { return c.stats }

// Bytes is the memory held by the table.
func (c *Random) Bytes() int { return c.t.bytes() }
