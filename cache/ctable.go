package cache

import "math/bits"

// ctable is the scatter table behind CLOCK and RANDOM: open addressing over
// a flat []uint64 of non-zero fingerprints in buckets of 8 slots (one cache
// line), with the mark bits packed one per slot and no pointers. A
// fingerprint lives in one of two buckets, chosen by two independent parts of
// its bits, so a lookup reads at most two cache lines whatever the load. A
// new fingerprint goes to the emptier of its two buckets; when both are full
// a resident is moved to its other bucket (cuckoo displacement), repeating
// along a random walk until a slot is free.
//
// Why not linear probing: the table must run ~90% full to hold ≤ 9 bytes per
// entry, where a linear-probing (Robin Hood) insert walks ~85 slots on
// average; measured, that made a miss cost 100–500 ns. Two-choice buckets of
// eight hold loads up to ~98% with a walk of a few steps.
//
// Why the emptier bucket: with the first bucket always tried first, 60% of
// the buckets of a full cache were full and 36% of RANDOM's misses found both
// of their buckets full and had to walk; choosing the emptier one spreads the
// free slots (measured: 52–59% full buckets, 28–32% of the misses walk, see
// TestCtableBalance), and the walk moves one resident per step.
type ctable struct {
	slots []uint64 // 0 = empty; bucket b is slots[8b : 8b+8]
	marks []uint64 // one bit per slot
	nb    uint64   // buckets
	n     int
	rng   uint64 // for the displacement walk
	walks uint64 // inserts that found both buckets full
	drops uint64 // entries lost by a walk that found no free slot
}

const (
	bucketSlots = 8
	maxWalk     = 500
)

// ctableBuckets is the number of buckets for k entries: as many as 8.85
// bytes per entry pay for (8 per slot, 1/8 per mark bit, so 65 bytes per
// bucket: ~8.9% spare slots; 0.15 byte is left for the allocator's page
// rounding, so that the heap-measured cost stays ≤ 9 from k = 2^16), and at least
// 6% + 8 spare slots so that small tables are never nearly full.
func ctableBuckets(k int) int {
	nb := (885*k/100 - 8) / 65
	if min := (k + k/16 + 8 + bucketSlots - 1) / bucketSlots; nb < min {
		nb = min
	}
	return nb
}

func newCtable(k int) ctable {
	nb := ctableBuckets(k)
	m := nb * bucketSlots
	return ctable{slots: make([]uint64, m), marks: make([]uint64, (m+63)/64), nb: uint64(nb), rng: 0x2545f4914f6cdd1d}
}

// b1 and b2 are the two buckets of fp, from two multiplicative hashes (so
// that even fingerprints that differ only in their low bits spread out),
// scaled to the table by a multiply-shift (no division).
func (t *ctable) b1(fp uint64) uint64 {
	b, _ := bits.Mul64(fp*0x9e3779b97f4a7c15, t.nb)
	return b
}

func (t *ctable) b2(fp uint64) uint64 {
	b, _ := bits.Mul64((fp^fp>>32)*0xc2b2ae3d27d4eb4f, t.nb)
	return b
}

func (t *ctable) buckets(fp uint64) (uint64, uint64) { return t.b1(fp), t.b2(fp) }

// bucket returns bucket b's slots (one bounds check; none per slot).
func (t *ctable) bucket(b uint64) *[bucketSlots]uint64 {
	return (*[bucketSlots]uint64)(t.slots[b*bucketSlots:])
}

// eqMask returns a byte with bit i set iff s[i] == v, without branches (the
// compiler makes each if a conditional move): a loop that stops at the match
// mispredicts once per lookup, and the shift-and-or form measured ~50% slower.
func eqMask(s *[bucketSlots]uint64, v uint64) uint {
	// Four independent chains of conditional moves, joined at the end: one
	// chain of eight would be eight moves deep.
	var m0, m1, m2, m3 uint
	if s[0] == v {
		m0 |= 1
	}
	if s[1] == v {
		m1 |= 2
	}
	if s[2] == v {
		m2 |= 4
	}
	if s[3] == v {
		m3 |= 8
	}
	if s[4] == v {
		m0 |= 16
	}
	if s[5] == v {
		m1 |= 32
	}
	if s[6] == v {
		m2 |= 64
	}
	if s[7] == v {
		m3 |= 128
	}
	return m0 | m1 | m2 | m3
}

// find returns the slot holding fp, or -1: the first bucket, then the second.
func (t *ctable) find(fp uint64) int {
	b := t.b1(fp)
	if m := eqMask(t.bucket(b), fp); m != 0 {
		return int(b*bucketSlots) + bits.TrailingZeros(m)
	}
	b = t.b2(fp)
	if m := eqMask(t.bucket(b), fp); m != 0 {
		return int(b*bucketSlots) + bits.TrailingZeros(m)
	}
	return -1
}

func (t *ctable) mark(i uint64) bool { return t.marks[i>>6]&(1<<(i&63)) != 0 }
func (t *ctable) setMark(i uint64)   { t.marks[i>>6] |= 1 << (i & 63) }
func (t *ctable) clearMark(i uint64) { t.marks[i>>6] &^= 1 << (i & 63) }

func (t *ctable) putMark(i uint64, on bool) {
	if on {
		t.setMark(i)
	} else {
		t.clearMark(i)
	}
}

// free returns an empty slot of bucket b, or -1.
func (t *ctable) free(b uint64) int {
	if m := eqMask(t.bucket(b), 0); m != 0 {
		return int(b*bucketSlots) + bits.TrailingZeros(m)
	}
	return -1
}

func (t *ctable) place(i uint64, fp uint64, mark bool) {
	t.slots[i] = fp
	t.putMark(i, mark)
	t.n++
}

// insert adds fp, which must be absent and non-zero, to the emptier of its
// buckets (the first on a tie). If the displacement walk finds no free slot
// the entry it holds last is dropped (counted in drops): for a cache that is
// an early eviction, not an error.
func (t *ctable) insert(fp uint64, mark bool) {
	t.insertIn(fp, mark, t.b1(fp), t.b2(fp))
}

// insertIn is insert with fp's buckets already computed.
func (t *ctable) insertIn(fp uint64, mark bool, b1, b2 uint64) {
	e1 := eqMask(t.bucket(b1), 0)
	e2 := eqMask(t.bucket(b2), 0)
	if e1 == 0 && e2 == 0 {
		t.walk(fp, mark, b1, b2)
		return
	}
	if bits.OnesCount(e1) >= bits.OnesCount(e2) {
		t.place(b1*bucketSlots+uint64(bits.TrailingZeros(e1)), fp, mark)
	} else {
		t.place(b2*bucketSlots+uint64(bits.TrailingZeros(e2)), fp, mark)
	}
}

// walk inserts fp, whose buckets b1 and b2 are full, by a random walk: put
// fp in a random slot of one of its buckets, move the resident it displaces
// to that resident's other bucket, and so on until a bucket has room.
func (t *ctable) walk(fp uint64, mark bool, b1, b2 uint64) {
	t.walks++
	r := splitmix64(&t.rng)
	b := b1
	if r&1 == 0 {
		b = b2
	}
	for range maxWalk {
		i := b*bucketSlots + (r>>1)%bucketSlots
		old, oldMark := t.slots[i], t.mark(i)
		t.slots[i] = fp
		t.putMark(i, mark)
		fp, mark = old, oldMark
		alt := t.b1(fp)
		if alt == b {
			alt = t.b2(fp)
		}
		if j := t.free(alt); j >= 0 {
			t.place(uint64(j), fp, mark)
			return
		}
		b = alt
		r = splitmix64(&t.rng)
	}
	t.drops++
}

// remove empties slot i.
func (t *ctable) remove(i uint64) {
	t.slots[i] = 0
	t.clearMark(i)
	t.n--
}

func (t *ctable) m() uint64 { return uint64(len(t.slots)) }

func (t *ctable) bytes() int { return 8*len(t.slots) + 8*len(t.marks) }
