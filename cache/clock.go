package cache

import "math/bits"

// Clock is a CLOCK cache of fingerprints in a scatter table: a hit sets the
// entry's mark bit; on a miss with the cache full the hand sweeps the table's
// slots (slot 0 of every bucket, then slot 1, …), clearing marks, and evicts
// the first unmarked entry; the new entry, marked, goes to the emptier of its
// two buckets (displacement walk if both are full). Not safe for concurrent
// use.
//
// Unlike Random, Clock is not set-associative: a set-associative CLOCK
// (a hand over the new fingerprint's 16 candidate slots) missed in 14.8
// instead of 48 CPU-ns at k = 2^16, but 1.0–1.9 points more often than
// textbook CLOCK on streams with the crawl's shape, which also broke the
// live estimator's accuracy (internal/mrc); see docs/bench/cache.md.
type Clock struct {
	t     ctable
	k     int
	hand  uint64
	stats Stats
}

// NewClock returns an empty CLOCK cache of k ≥ 0 entries (k = 0 never hits).
func NewClock(k int) *Clock {
	if k < 0 {
		k = 0
	}
	return &Clock{t: newCtable(clockBuckets(k)), k: k}
}

// Seen implements Cache.
func (c *Clock) Seen(fp uint64) bool {
	fp = key(fp)
	t := &c.t
	b1 := t.b1(fp)
	s1 := t.bucket(b1)
	if m := eqLo(s1, fp) | eqHi(s1, fp); m != 0 {
		t.marks[b1] |= uint8(m)
		c.stats.Hits++
		return true
	}
	b2 := t.b2(fp)
	s2 := t.bucket(b2)
	if m := eqLo(s2, fp) | eqHi(s2, fp); m != 0 {
		t.marks[b2] |= uint8(m)
		c.stats.Hits++
		return true
	}
	c.stats.Misses++
	if c.k == 0 {
		return false
	}
	if t.n >= c.k {
		c.evict()
	}
	t.insertIn(fp, true, b1, b2)
	return false
}

// evict advances the hand to the first unmarked entry, clearing the marks it
// passes, and removes that entry.
//
// The hand visits slot 0 of every bucket, then slot 1 of every bucket, and so
// on (bucket by bucket in address order, which the hardware prefetches), so
// that consecutive evictions empty slots of different buckets: the free slots
// a full cache has are then spread over the table, where new fingerprints'
// buckets find them. A hand that emptied whole buckets in a row left the free
// slots in the few buckets just behind it, so almost every insert found both
// of its buckets full and had to walk (measured: 2× the cost of a miss). A
// new entry lands in a slot the hand vacated recently, as the new page takes
// the victim's frame in textbook CLOCK.
func (c *Clock) evict() {
	t := &c.t
	i := c.hand
	for {
		if t.slot(i) != 0 {
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

// step is the slot the hand visits after slot i: the same slot of the next
// bucket, or slot j+1 of bucket 0 after the last bucket.
func (c *Clock) step(i uint64) uint64 {
	i += bucketSlots
	if m := c.t.m(); i >= m {
		i = (i - m + 1) % bucketSlots
	}
	return i
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

// Random is a RANDOM cache of fingerprints in a scatter table. Once the
// cache is full it is set-associative: a miss evicts an entry
// chosen uniformly at random among the residents of the new fingerprint's
// bucket pair and the new entry takes its slot (a pair with no resident,
// possible only in tiny tables, falls back to a uniformly random entry of
// the whole cache). Deterministic for a given seed. Not safe for concurrent
// use.
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
	return &Random{t: newCtable(randomBuckets(k)), k: k, rng: seed}
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
	t := &c.t
	b1 := t.b1(fp)
	s1 := t.bucket(b1)
	if eqLo(s1, fp)|eqHi(s1, fp) != 0 {
		c.stats.Hits++
		return true
	}
	b2 := t.b2(fp)
	s2 := t.bucket(b2)
	if eqLo(s2, fp)|eqHi(s2, fp) != 0 {
		c.stats.Hits++
		return true
	}
	c.stats.Misses++
	if t.n < c.k || b1 == b2 {
		c.missSlow(fp, b1, b2, splitmix64(&c.rng))
		return false
	}
	// A uniform choice among the pair's residents: a random slot, drawn
	// again (in missSlow) if it is empty.
	r := splitmix64(&c.rng)
	j := int(r & 15)
	v := &t.bk[pairBucket(b1, b2, j)][j&(bucketSlots-1)]
	if *v == 0 {
		c.missSlow(fp, b1, b2, r>>4)
		return false
	}
	*v = fp
	return false
}

// missSlow handles the misses Seen's fast path does not: a cache still
// filling, a fingerprint whose two buckets are one, a draw of an empty slot
// (r holds the next random bits), a pair with no resident.
func (c *Random) missSlow(fp, b1, b2, r uint64) {
	t := &c.t
	if t.n < c.k {
		t.insertIn(fp, false, b1, b2)
		return
	}
	if c.k == 0 {
		return
	}
	occ := t.pairOcc(b1, b2)
	if occ == 0 {
		for {
			i, _ := bits.Mul64(splitmix64(&c.rng), t.m())
			if t.slot(i) != 0 {
				t.remove(i)
				break
			}
		}
		t.insertIn(fp, false, b1, b2)
		return
	}
	// Draws of 4 bits, rejecting empty slots: uniform over the residents.
	j := int(r & 15)
	for tries := 1; occ&(1<<j) == 0; tries++ {
		if tries == 15 { // out of random bits (very rare)
			j = firstFrom(occ, int(splitmix64(&c.rng)&15))
			break
		}
		r >>= 4
		j = int(r & 15)
	}
	t.setSlot(pairSlot(b1, b2, j), fp)
}

// Len implements Cache.
func (c *Random) Len() int { return c.t.n }

// Cap implements Cache.
func (c *Random) Cap() int { return c.k }

// Stats implements Cache.
func (c *Random) Stats() Stats { return c.stats }

// Bytes is the memory held by the table.
func (c *Random) Bytes() int { return c.t.bytes() }
