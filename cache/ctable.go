package cache

import "math/bits"

// ctable is the scatter table behind CLOCK and RANDOM: open addressing over
// a flat []uint64 of non-zero fingerprints in buckets of 8 slots (one cache
// line), with the mark bits packed one per slot and no pointers. A
// fingerprint lives in one of two buckets, chosen by two independent parts of
// its bits, so a lookup reads at most two cache lines whatever the load. An
// insert into two full buckets moves a resident entry to its other bucket
// (cuckoo displacement), repeating along a random walk until a slot is free.
//
// Why not linear probing: the table must run ~92% full to hold ≤ 9 bytes per
// entry, where a linear-probing (Robin Hood) insert walks ~85 slots on
// average; measured, that made a miss cost 100–500 ns. Two-choice buckets of
// eight hold loads up to ~98% with a walk of a few steps.
type ctable struct {
	slots []uint64 // 0 = empty; bucket b is slots[8b : 8b+8]
	marks []uint64 // one bit per slot
	nb    uint64   // buckets
	n     int
	rng   uint64 // for the displacement walk
	drops uint64 // entries lost by a walk that found no free slot
}

const (
	bucketSlots = 8
	maxWalk     = 500
)

func newCtable(k int) ctable {
	nb := (slotsFor(k) + bucketSlots - 1) / bucketSlots
	m := nb * bucketSlots
	return ctable{slots: make([]uint64, m), marks: make([]uint64, (m+63)/64), nb: uint64(nb), rng: 0x2545f4914f6cdd1d}
}

// buckets returns the two buckets of fp from two multiplicative hashes (so
// that even fingerprints that differ only in their low bits spread out).
func (t *ctable) buckets(fp uint64) (uint64, uint64) {
	b1, _ := bits.Mul64(fp*0x9e3779b97f4a7c15, t.nb)
	b2, _ := bits.Mul64((fp^fp>>32)*0xc2b2ae3d27d4eb4f, t.nb)
	return b1, b2
}

// lookup returns the slot holding fp (or -1) and, when fp is absent, an
// empty slot of one of its buckets (or -1), from one read of each bucket.
func (t *ctable) lookup(fp uint64) (at, empty int) {
	b1, b2 := t.buckets(fp)
	empty = -1
	s := t.slots[b1*bucketSlots : b1*bucketSlots+bucketSlots]
	for i, x := range s {
		if x == fp {
			return int(b1*bucketSlots) + i, -1
		}
		if x == 0 && empty < 0 {
			empty = int(b1*bucketSlots) + i
		}
	}
	s = t.slots[b2*bucketSlots : b2*bucketSlots+bucketSlots]
	for i, x := range s {
		if x == fp {
			return int(b2*bucketSlots) + i, -1
		}
		if x == 0 && empty < 0 {
			empty = int(b2*bucketSlots) + i
		}
	}
	return -1, empty
}

// find returns the slot holding fp, or -1.
func (t *ctable) find(fp uint64) int {
	b1, b2 := t.buckets(fp)
	s := t.slots[b1*bucketSlots : b1*bucketSlots+bucketSlots]
	for i, x := range s {
		if x == fp {
			return int(b1*bucketSlots) + i
		}
	}
	s = t.slots[b2*bucketSlots : b2*bucketSlots+bucketSlots]
	for i, x := range s {
		if x == fp {
			return int(b2*bucketSlots) + i
		}
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
	s := t.slots[b*bucketSlots : b*bucketSlots+bucketSlots]
	for i, x := range s {
		if x == 0 {
			return int(b*bucketSlots) + i
		}
	}
	return -1
}

func (t *ctable) place(i int, fp uint64, mark bool) {
	t.slots[i] = fp
	t.putMark(uint64(i), mark)
	t.n++
}

// insert adds fp, which must be absent and non-zero. If the displacement walk
// finds no free slot the entry it holds last is dropped (counted in drops):
// for a cache that is an early eviction, not an error.
func (t *ctable) insert(fp uint64, mark bool) {
	b1, b2 := t.buckets(fp)
	if i := t.free(b1); i >= 0 {
		t.place(i, fp, mark)
		return
	}
	if i := t.free(b2); i >= 0 {
		t.place(i, fp, mark)
		return
	}
	t.walk(fp, mark, b1, b2)
}

// walk inserts fp, whose buckets b1 and b2 are full, by displacing residents
// along a random walk. At each step it first looks for a resident of the
// current bucket whose other bucket has room (one move), and only then kicks
// a random resident on.
func (t *ctable) walk(fp uint64, mark bool, b1, b2 uint64) {
	b := b1
	if splitmix64(&t.rng)&1 == 0 {
		b = b2
	}
	for range maxWalk {
		r := splitmix64(&t.rng)
		i := b*bucketSlots + r%bucketSlots
		for j := b * bucketSlots; j < b*bucketSlots+bucketSlots; j++ {
			o1, o2 := t.buckets(t.slots[j])
			alt := o1
			if o1 == b {
				alt = o2
			}
			if e := t.free(alt); e >= 0 {
				// Move resident j to its other bucket; fp takes slot j.
				t.place(e, t.slots[j], t.mark(j))
				t.n--
				t.slots[j] = fp
				t.putMark(j, mark)
				t.n++
				return
			}
		}
		old, oldMark := t.slots[i], t.mark(i)
		t.slots[i] = fp
		t.putMark(i, mark)
		fp, mark = old, oldMark
		o1, o2 := t.buckets(fp)
		alt := o1
		if o1 == b {
			alt = o2
		}
		if j := t.free(alt); j >= 0 {
			t.place(j, fp, mark)
			return
		}
		b = alt
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
