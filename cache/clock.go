package cache

import "math/bits"

// Clock is a CLOCK cache of fingerprints in a scatter table: a hit sets the
// entry's mark bit; on a miss with the cache full the hand sweeps the table's
// slots (in a fixed scattered order), clearing marks, and evicts the first
// unmarked entry. New entries start marked. Not safe for concurrent use.
type Clock struct {
	t      ctable
	k      int
	hand   uint64
	stride uint64
	stats  Stats
}

// NewClock returns an empty CLOCK cache of k ≥ 0 entries (k = 0 never hits).
func NewClock(k int) *Clock {
	if k < 0 {
		k = 0
	}
	t := newCtable(k)
	return &Clock{t: t, k: k, stride: strideFor(t.nb)}
}

// Seen implements Cache.
func (c *Clock) Seen(fp uint64) bool {
	fp = key(fp)
	i, empty := c.t.lookup(fp)
	if i >= 0 {
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
	if empty >= 0 {
		c.t.place(empty, fp, true)
	} else {
		c.t.insert(fp, true)
	}
	return false
}

// evict advances the hand to the first unmarked entry, clearing the marks it
// passes, and removes that entry.
//
// The hand visits the buckets in a scattered order (bucket += stride mod nb,
// with stride ≈ 0.618·nb coprime to nb, so every bucket is visited once per
// turn) and the eight slots of each bucket in order: one cache line per eight
// steps, yet no long runs of neighbouring evictions, which would leave the
// buckets behind the hand empty while inserts fill the rest (with linear
// probing that made chains of thousands of slots ahead of the hand).
func (c *Clock) evict() {
	t := &c.t
	i := c.hand
	for {
		if t.slots[i] != 0 {
			if !t.mark(i) {
				t.remove(i)
				c.hand = c.step(i)
				return
			}
			t.clearMark(i)
		}
		i = c.step(i)
	}
}

func (c *Clock) step(i uint64) uint64 {
	if (i+1)%bucketSlots != 0 {
		return i + 1
	}
	b := i/bucketSlots + c.stride
	if b >= c.t.nb {
		b -= c.t.nb
	}
	return b * bucketSlots
}

// strideFor returns a step coprime to m near m/φ.
func strideFor(m uint64) uint64 {
	if m <= 1 {
		return 0
	}
	s := uint64(float64(m) * 0.6180339887498949)
	for s < 1 || gcd(s, m) != 1 {
		s++
	}
	return s
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
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
	t     ctable
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
	return &Random{t: newCtable(k), k: k, rng: seed}
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
	i, empty := c.t.lookup(fp)
	if i >= 0 {
		c.stats.Hits++
		return true
	}
	c.stats.Misses++
	if c.k == 0 {
		return false
	}
	if c.t.n >= c.k {
		for {
			i, _ := bits.Mul64(splitmix64(&c.rng), c.t.m())
			if c.t.slots[i] != 0 {
				c.t.remove(i)
				break
			}
		}
	}
	if empty >= 0 {
		c.t.place(empty, fp, false)
	} else {
		c.t.insert(fp, false)
	}
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
