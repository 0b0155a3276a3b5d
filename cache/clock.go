package cache

import "math/bits"

// Clock is a CLOCK cache of fingerprints in a scatter table: a hit sets the
// entry's mark bit, a new entry starts marked. Once the cache is full it is
// set-associative: a miss evicts from the new fingerprint's own bucket pair
// (the 16 slots of its two buckets, the only slots it may occupy), as CLOCK
// would with a hand over those 16 slots: starting at a position that turns
// with every eviction, the hand clears the marks it passes and evicts the
// first unmarked entry (the first entry after a full turn if all are marked).
// The new entry takes the victim's slot. A miss thus reads and writes the two
// cache lines the lookup has already read (and two mark bytes): no global
// hand, no displacement walk. While the cache fills, new entries go to free
// slots (with a displacement walk if both buckets are full), and a pair with
// no resident at all (possible only in tiny tables) falls back to a global
// hand. See doc.go for how far this is from textbook CLOCK. Not safe for
// concurrent use.
type Clock struct {
	t     ctable
	k     int
	hand  uint64 // global hand, for a pair with no resident
	turn  int    // where the hand starts in a pair
	stats Stats
}

// NewClock returns an empty CLOCK cache of k ≥ 0 entries (k = 0 never hits).
func NewClock(k int) *Clock {
	if k < 0 {
		k = 0
	}
	return &Clock{t: newCtable(k), k: k}
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
	if t.n < c.k || b1 == b2 {
		c.missSlow(fp, b1, b2)
		return false
	}
	// The hand starts at h and stops at the first unmarked slot. Empty
	// slots are never marked, so the slots it passes are all residents;
	// only if it stops at an empty slot does it need the pair's occupancy.
	h := c.turn & 15
	marks := t.pairMarks(b1, b2)
	cand := ^marks
	if cand == 0 { // all 16 marked (so all resident): a full turn clears them
		marks, cand = 0, 0xffff
	}
	d := bits.TrailingZeros16(bits.RotateLeft16(cand, -h)) // slots passed
	j := (h + d) & 15
	v := &t.bk[pairBucket(b1, b2, j)][j&(bucketSlots-1)]
	if *v == 0 {
		c.missSlow(fp, b1, b2)
		return false
	}
	c.turn++
	passed := bits.RotateLeft16(uint16(1)<<d-1, h)
	t.setPairMarks(b1, b2, marks&^passed|1<<j)
	*v = fp
	return false
}

// missSlow handles the misses Seen's fast path does not: a cache still
// filling, a fingerprint whose two buckets are one, a hand that stops at an
// empty slot, a pair with no resident.
func (c *Clock) missSlow(fp, b1, b2 uint64) {
	t := &c.t
	if t.n < c.k {
		t.insertIn(fp, true, b1, b2)
		return
	}
	if c.k == 0 {
		return
	}
	occ := t.pairOcc(b1, b2)
	if occ == 0 {
		c.evict()
		t.insertIn(fp, true, b1, b2)
		return
	}
	h := c.turn & 15
	c.turn++
	marks := t.pairMarks(b1, b2)
	cand := occ &^ marks
	if cand == 0 { // every entry marked: a full turn clears them all
		marks &^= occ
		cand = occ
	}
	d := bits.TrailingZeros16(bits.RotateLeft16(cand, -h)) // slots passed
	j := (h + d) & 15
	passed := bits.RotateLeft16(uint16(1)<<d-1, h)
	t.setPairMarks(b1, b2, marks&^passed|1<<j)
	t.setSlot(pairSlot(b1, b2, j), fp)
}

// evict is the fallback for a pair with no resident: it advances the
// global hand to the first unmarked entry, clearing the marks it passes,
// and removes that entry. The hand visits slot 0 of every bucket, then slot
// 1 of every bucket, and so on.
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
// cache is full it is set-associative, like Clock: a miss evicts an entry
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
