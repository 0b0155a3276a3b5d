package cache

import (
	"encoding/binary"
	"math/bits"
)

// Clock is a CLOCK cache of fingerprints in a scatter table: a hit sets the
// entry's mark bit. A miss with the cache full inserts the new entry,
// marked, in one of its two buckets, in one of two ways:
//
//   - if either bucket has a free slot (about two misses in three), the
//     global hand sweeps the table's slots (slot 0 of every bucket, then
//     slot 1, …), clearing marks, and evicts the first unmarked entry, as
//     textbook CLOCK does; the new entry goes to the emptier bucket;
//   - if both are full, the hand does not move: the new entry replaces an
//     unmarked resident of its two buckets (the first at or after a
//     position taken from its bits among the sixteen slots, cyclically; any
//     resident if all sixteen are marked).
//
// The second way is a deliberate approximation of CLOCK: it evicts an entry
// CLOCK would evict soon (an unmarked one), only earlier, without the cuckoo
// walk that cost half of a miss. The hand is global, not per bucket pair,
// because a hand over 16 slots protects new entries for too few misses.
// TestCloseToTextbook bounds the deviation from a marked-insert textbook
// CLOCK on its traces; on some of the caching study's traces it is larger,
// and the marked insert (the paper's CLOCK inserts unmarked) adds more
// (docs/caching-study.md §5). Not safe for concurrent use.
type Clock struct {
	t     ctable
	k     int
	hand  uint64
	stats Stats
	full  bool // holds k entries in a table with occupancy bits: Seen's fast miss path
}

// NewClock returns an empty CLOCK cache of k ≥ 0 entries (k = 0 never hits).
func NewClock(k int) *Clock {
	if k < 0 {
		k = 0
	}
	nb, occ := clockBuckets(k)
	t := newCtable(nb)
	if occ {
		t.withOcc()
	}
	return &Clock{t: t, k: k}
}

// Seen implements Cache.
//
// The miss path of a full cache is written out here, not called (a call
// saves and reloads registers), and branches on "both buckets full" rather
// than computing both ways: the branchless form was slower on some hosts.
// Seen indexes the table without bounds checks (rawTable); why each index
// is in range is said where r is made, and TestClockMatchesModel checks the
// hand and the padding after every request. Figures:
// docs/bench/cache-history.md.
func (c *Clock) Seen(fp uint64) bool {
	fp = Key(fp)
	t := &c.t
	// Without bounds checks (rawTable): b1, b2 < nb as high words of
	// products with nb, the hand < m, a victim's bucket < nb (its lane is
	// occupied; the padding's never is).
	r := t.raw()
	tg, lo := fp>>56*lanes, fp&remMask
	b1 := t.b1(fp)
	k1 := r.bucket(b1)
	if m := zeroBytes(tagWord(k1) ^ tg); m != 0 {
		if j := matchIn(k1, m, lo); j >= 0 {
			*r.mark(b1) |= 1 << (j & 7)
			c.stats.Hits++
			return true
		}
	}
	b2 := t.b2(fp)
	k2 := r.bucket(b2)
	if m := zeroBytes(tagWord(k2) ^ tg); m != 0 {
		if j := matchIn(k2, m, lo); j >= 0 {
			*r.mark(b2) |= 1 << (j & 7)
			c.stats.Hits++
			return true
		}
	}
	c.stats.Misses++
	if !c.full {
		c.missSlow(fp, b1, b2)
		return false
	}
	o1, o2 := uint64(*r.occ(b1)), uint64(*r.occ(b2))
	if o1&o2 == 0xff {
		// Both buckets full (~35% of the misses): fp replaces the first
		// unmarked resident of its sixteen slots from localStart(fp),
		// cyclically (any resident if all are marked).
		jl := localSlot(*r.mark(b1), *r.mark(b2), fp)
		b, j := pairBucket(b1, b2, jl), uint64(jl%bucketSlots)
		putIn(r.bucket(b), j, fp)
		*r.mark(b) |= 1 << j
		return false
	}
	// fp will go to the emptier of its buckets (b1 on a tie).
	b, j := emptier(b1, b2, ^o1&0xff, ^o2&0xff)
	// The hand's victim, found in the mark and occupancy words of the
	// eight buckets from the hand's: the first occupied unmarked slot of
	// the hand's row. If these eight have none (~1.5% of the misses of a
	// stream of new fingerprints), their marks in the row are cleared and
	// the hand moves on to the next eight.
	h := c.hand
	for {
		hb, hj := h/bucketSlots, h%bucketSlots
		pm, po := r.marks8(hb), r.occ8(hb)
		wm, wo := binary.LittleEndian.Uint64(pm), binary.LittleEndian.Uint64(po)
		row := uint64(lanes) << hj
		if cand := (wo &^ wm) & row; cand != 0 {
			p := uint64(bits.TrailingZeros64(cand)) // the victim's bit: 8 × its lane + hj
			binary.LittleEndian.PutUint64(pm, wm&^((2<<p-1)&row))
			binary.LittleEndian.PutUint64(po, wo&^(1<<p))
			vb := hb + p/8
			r.bucket(vb)[hj] = 0
			c.hand = c.step(vb*bucketSlots + hj)
			break
		}
		binary.LittleEndian.PutUint64(pm, wm&^row)
		h = c.stepWord(h)
	}
	putIn(r.bucket(b), j, fp)
	*r.mark(b) |= 1 << j
	*r.occ(b) |= 1 << j
	return false
}

// lanes has bit 0 of every byte set: bit j of the mark (or occupancy) bytes
// of eight consecutive buckets, loaded as one little-endian word w, is
// (w >> j) & lanes.
const lanes = 0x0101010101010101

// ltMask is all ones if a < b, else 0 (a, b < 2⁶³).
func ltMask(a, b uint64) uint64 { return uint64(int64(a-b) >> 63) }

// localStart is where, among the sixteen slots of its pair, the search for
// the victim of fp's local eviction starts: four bits of fp·φ.
func localStart(fp uint64) int { return int(fp * 0x9e3779b97f4a7c15 >> 60) }

// localVictim returns the slot, in bucket b1 or b2 (both full), of the
// entry a miss of fp evicts without moving the hand: the first unmarked one
// of the pair's sixteen slots from localStart(fp), cyclically; the first
// one from there if all are marked. (Starting where the hand would reach
// first left new entries where the hand comes soon: they lost their turn.)
func (c *Clock) localVictim(fp, b1, b2 uint64) (uint64, uint64) {
	j := localSlot(c.t.marks[b1], c.t.marks[b2], fp)
	return pairBucket(b1, b2, j), uint64(j % bucketSlots)
}

// localSlot is localVictim's slot (0–15) of the pair whose buckets' mark
// bytes are m1 and m2.
func localSlot(m1, m2 uint8, fp uint64) int {
	um := uint16(^m1) | uint16(^m2)<<8
	um |= uint16(ltMask(uint64(um), 1)) // all marked: any
	return firstFrom(um, localStart(fp))
}

// missSlow is Seen's miss for the cases its fast path leaves: a cache still
// filling (the displacement walk may run), a table without occupancy bits
// (fewer than occMinBuckets). (The fast path is right for a fingerprint
// whose two buckets are one: its pair is that bucket twice.)
func (c *Clock) missSlow(fp, b1, b2 uint64) {
	t := &c.t
	if t.n < c.k {
		t.insertIn(fp, true, b1, b2)
		c.full = t.n == c.k && t.occ != nil
		return
	}
	if c.k == 0 {
		return
	}
	if t.free(b1) < 0 && t.free(b2) < 0 {
		b, j := c.localVictim(fp, b1, b2)
		t.put(b, j, fp)
		t.setMark(b*bucketSlots + j)
		return
	}
	c.evict()
	t.insertIn(fp, true, b1, b2)
}

// evict advances the hand to the first unmarked entry, clearing the marks it
// passes, and removes that entry: the misses of tables without occupancy
// bits. (Seen's fast path does the same from the mark and occupancy words,
// eight buckets at a time, because a slot-by-slot loop reading a bucket
// line per step was costly on the misses whose victim is far.)
//
// The hand visits slot 0 of every bucket, then slot 1 of every bucket, and so
// on (bucket by bucket in address order, which the hardware prefetches), so
// that consecutive evictions empty slots of different buckets: the free slots
// a full cache has are then spread over the table, where new fingerprints'
// buckets find them. A hand that emptied whole buckets in a row left the free
// slots in the few buckets just behind it, so almost every insert found both
// of its buckets full. A new entry lands in a slot the hand vacated
// recently, as the new page takes the victim's frame in textbook CLOCK.
func (c *Clock) evict() {
	t := &c.t
	i := c.hand
	for {
		if t.used(i) {
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

// stepWord is the slot the hand visits after the eight buckets from slot
// i's (the words of the mark and occupancy bytes beyond the last bucket
// are padding, zero: no occupied slot, no mark).
func (c *Clock) stepWord(i uint64) uint64 {
	i += 8 * bucketSlots
	if m := c.t.m(); i >= m {
		i = (i%bucketSlots + 1) % bucketSlots
	}
	return i
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
	fp = Key(fp)
	t := &c.t
	tg, lo := fp>>56*lanes, fp&remMask
	b1 := t.b1(fp)
	k1 := &t.bk[b1]
	if matchIn(k1, zeroBytes(tagWord(k1)^tg), lo) >= 0 {
		c.stats.Hits++
		return true
	}
	b2 := t.b2(fp)
	k2 := &t.bk[b2]
	if matchIn(k2, zeroBytes(tagWord(k2)^tg), lo) >= 0 {
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
	b, jb := pairBucket(b1, b2, j), uint64(j&(bucketSlots-1))
	if t.bk[b][jb] == 0 {
		c.missSlow(fp, b1, b2, r>>4)
		return false
	}
	t.put(b, jb, fp)
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
